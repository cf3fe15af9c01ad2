"""Throttle slots: one inserted document per counted attempt (see ``domain.throttle``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from peertrain.auth.domain.throttle import Limit, Refused, Slot, probe_order, slot_id

__all__ = ["ThrottleStore"]

Doc = dict[str, Any]


class ThrottleStore:
    """The ``throttle_slots`` collection: ``{_id: <key>:<window>:<n>, key, window,
    expires_at}``, one document per attempt that counts.

    Only inserts decide (the unique ``_id``); nothing is read and then written, so the
    limits hold however many attempts race, on FerretDB as on MongoDB.
    """

    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self.col = db["throttle_slots"]

    async def take(self, limit: Limit, key: str, *, now: datetime) -> Slot | Refused:
        """Take a free slot of ``key`` in the current window, if any is left."""
        window = limit.window(now)
        taken = await self.col.count_documents({"key": key, "window": window.index})
        if taken < limit.max_attempts:
            for n in probe_order(limit.max_attempts, taken):
                slot = Slot(slot_id(key, window.index, n))
                doc = {"_id": slot.id, "key": key, "window": window.index}
                try:
                    await self.col.insert_one({**doc, "expires_at": window.ends_at})
                except DuplicateKeyError:
                    continue
                return slot
        return Refused(limit.name, window.retry_after_s(now))

    async def release(self, slot: Slot) -> None:
        """Give a slot back (the attempt does not count after all)."""
        await self.col.delete_one({"_id": slot.id})

    async def clear(self, key: str) -> None:
        """Forget every attempt of ``key`` (a successful login)."""
        await self.col.delete_many({"key": key})

    async def purge(self, *, now: datetime) -> int:
        """Delete the slots of windows that ended (their ids are never used again)."""
        result = await self.col.delete_many({"expires_at": {"$lte": now}})
        return result.deleted_count
