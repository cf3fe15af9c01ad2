"""Login attempt counters, one small document per (username, address) window."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from peertrain.auth.domain.throttle import retry_after_s, window_open

__all__ = ["ThrottleStore"]

Doc = dict[str, Any]


class ThrottleStore:
    """The ``login_attempts`` collection.

    Parameters
    ----------
    max_attempts
        Attempts allowed in one window (failures, plus the one in progress).
    window_s
        Window length from its first attempt.
    """

    def __init__(self, db: AsyncDatabase[Doc], *, max_attempts: int, window_s: int) -> None:
        self.col = db["login_attempts"]
        self.max_attempts = max_attempts
        self.window_s = window_s

    async def reserve(self, key: str, *, now: datetime) -> int | None:
        """Count one attempt; ``None`` if allowed, else the seconds until it would be.

        Every step is a single-document atomic write, so concurrent attempts can never
        get more than ``max_attempts`` through in one window.
        """
        opened_after = now - timedelta(seconds=self.window_s)
        for _ in range(5):
            doc = await self.col.find_one_and_update(
                {"_id": key, "started": {"$gt": opened_after}, "count": {"$lt": self.max_attempts}},
                {"$inc": {"count": 1}},
                return_document=ReturnDocument.AFTER,
            )
            if doc is not None:
                return None
            doc = await self.col.find_one({"_id": key})
            if doc is not None and window_open(doc["started"], now, self.window_s):
                if doc["count"] >= self.max_attempts:
                    return retry_after_s(doc["started"], now, self.window_s)
                continue  # someone else just opened this window: count into it
            fresh = {
                "started": now,
                "count": 1,
                "expires_at": now + timedelta(seconds=self.window_s),
            }
            try:
                if doc is None:
                    await self.col.insert_one({"_id": key, **fresh})
                    return None
                result = await self.col.update_one(
                    {"_id": key, "started": doc["started"]}, {"$set": fresh}
                )
                if result.modified_count == 1:
                    return None
            except DuplicateKeyError:
                continue
        return retry_after_s(now, now, 1)  # heavy contention on one key: refuse for now

    async def clear(self, key: str) -> None:
        """A successful login: forget the window."""
        await self.col.delete_one({"_id": key})

    async def purge(self, *, now: datetime) -> int:
        """Delete windows that ended."""
        result = await self.col.delete_many({"expires_at": {"$lt": now}})
        return result.deleted_count
