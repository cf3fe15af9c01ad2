"""Idempotent consumers: a record of processed event ids under a unique index.

Delivery is at-least-once, so a consumer may see an event twice (a redelivery after a
crash, or the relay publishing again after a lost confirm). The :class:`Inbox` makes the
second delivery a success with no second effect.

Protocol (inserts only on the common path: on FerretDB/SQLite a lookup scans the whole
collection, while an insert under the unique ``_id`` index is cheap and atomic):

1. :meth:`Inbox.begin` inserts a *claim* ``<consumer>:<event id>``. It succeeds for a
   first delivery: handle the event.
2. After the handler, :meth:`Inbox.done` inserts ``<consumer>:<event id>:done``.
3. A delivery whose claim already exists looks for the ``done`` record (the only
   lookup, on the rare redelivery path): there, the event is a duplicate; absent, an
   earlier attempt died or failed mid-way, so the handler runs again.

So a redelivery after a completed handler has no second effect. A crash *inside* a
handler can still repeat its effect; handlers whose effect is a write to one document
make it atomic with the record through :meth:`Inbox.apply_once_to`.
"""

from __future__ import annotations

import contextlib
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

    async def begin(self, event_id: str) -> bool:
        """Claim ``event_id``; ``False`` if it was already fully processed."""
        try:
            await self.processed.insert_one({"_id": self._key(event_id)})
        except DuplicateKeyError:
            return not await self.seen(event_id)
        return True

    async def done(self, event_id: str) -> None:
        """Record that the handler of ``event_id`` completed."""
        with contextlib.suppress(DuplicateKeyError):
            await self.processed.insert_one(
                {"_id": f"{self._key(event_id)}:done", "at": datetime.now(UTC)}
            )

    async def seen(self, event_id: str) -> bool:
        """Whether ``event_id`` was fully processed by this consumer (a lookup)."""
        return await self.processed.find_one({"_id": f"{self._key(event_id)}:done"}) is not None

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
