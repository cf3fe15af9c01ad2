"""Idempotent consumers: a record of processed event ids under a unique index.

Delivery is at-least-once, so a consumer may see an event twice (a redelivery after a
crash, or the relay publishing again after a lost confirm). The :class:`Inbox` makes the
second delivery a success with no second effect.

Handlers whose effect is a write to one document can make it atomic with the record by
using :meth:`Inbox.apply_once_to` (the processed id is kept in the document itself);
otherwise the effect is applied, then the id recorded (effects must then tolerate a
crash between the two, e.g. be upserts keyed by the event id).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

__all__ = ["Inbox"]

Doc = dict[str, Any]


class Inbox:
    """Processed event ids of one consumer.

    Parameters
    ----------
    db
        The consumer's own database.
    consumer
        A stable consumer name (its queue name is a good one).
    """

    def __init__(self, db: AsyncDatabase[Doc], consumer: str) -> None:
        self.consumer = consumer
        self.processed: AsyncCollection[Doc] = db["processed_events"]

    def _key(self, event_id: str) -> str:
        return f"{self.consumer}:{event_id}"

    async def seen(self, event_id: str) -> bool:
        """Whether ``event_id`` was already processed by this consumer."""
        return await self.processed.find_one({"_id": self._key(event_id)}) is not None

    async def mark(self, event_id: str) -> bool:
        """Record ``event_id`` as processed; ``False`` if it already was."""
        try:
            await self.processed.insert_one(
                {"_id": self._key(event_id), "consumer": self.consumer, "at": datetime.now(UTC)}
            )
        except DuplicateKeyError:
            return False
        return True

    @staticmethod
    async def apply_once_to(
        collection: AsyncCollection[Doc],
        doc_id: Any,
        event_id: str,
        update: Doc,
        *,
        keep: int = 1000,
    ) -> bool:
        """Apply ``update`` to one document unless ``event_id`` was already applied to it.

        The check and the effect are one single-document write, so a crash can never
        leave the effect without its record. Returns ``True`` if the update was applied.
        """
        guarded = dict(update)
        push = dict(guarded.pop("$push", {}))
        push["_applied"] = {"$each": [event_id], "$slice": -keep}
        guarded["$push"] = push
        try:
            result = await collection.update_one(
                {"_id": doc_id, "_applied": {"$ne": event_id}}, guarded, upsert=True
            )
        except DuplicateKeyError:  # the document exists and already holds event_id
            return False
        return result.modified_count > 0 or result.upserted_id is not None
