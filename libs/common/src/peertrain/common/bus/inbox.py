"""Idempotent consumers: a record of processed event ids under a unique index.

Delivery is at-least-once, so a consumer may see an event twice (a redelivery after a
crash, or the relay publishing again after a lost confirm). The :class:`Inbox` makes the
second delivery a success with no second effect.

Protocol (one indexed lookup and one insert per event):

1. Before the handler, :meth:`Inbox.seen` looks up the record
   ``<consumer>:<event id>:done`` under the unique ``_id`` index. Absent, the event is
   new (or an earlier attempt died or failed mid-way): handle it. Present, it is a
   duplicate: acknowledge it, no second effect.
2. After the handler, :meth:`Inbox.done` inserts that record (a second insert of it, by
   a copy handled at the same time, is a duplicate key and changes nothing).

So a redelivery after a completed handler has no second effect. A crash *inside* a
handler can still repeat its effect; handlers whose effect is a write to one document
make it atomic with the record through :meth:`Inbox.apply_once_to`. (On FerretDB's
PostgreSQL backend the lookup uses the ``_id`` index's companion:
``deploy/local/postgres/ferretdb-indexes.sql``.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
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
        return f"{self.consumer}:{event_id}:done"

    async def done(self, event_id: str) -> None:
        """Record that the handler of ``event_id`` completed."""
        with contextlib.suppress(DuplicateKeyError):
            await self.processed.insert_one({"_id": self._key(event_id), "at": datetime.now(UTC)})

    async def seen(self, event_id: str) -> bool:
        """Whether ``event_id`` was fully processed by this consumer (a lookup)."""
        return await self.processed.find_one({"_id": self._key(event_id)}) is not None

    async def once(self, event_id: str, apply: Callable[[], Awaitable[None]]) -> bool:
        """Run ``apply`` unless ``event_id`` was processed; record it once it completed.

        Returns ``False`` for a duplicate (nothing run), ``True`` once applied.
        """
        if await self.seen(event_id):
            return False
        await apply()
        await self.done(event_id)
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
