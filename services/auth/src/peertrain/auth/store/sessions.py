"""Refresh-token families (one per login session), holding digests only."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from peertrain.auth.domain.refresh import Family

__all__ = ["SessionStore"]

Doc = dict[str, Any]

KEEP_USED = 64
"""Used digests remembered per family (an older copy is refused, but not as reuse)."""


def _family(doc: Doc) -> Family:
    return Family(
        id=doc["_id"],
        user_id=doc["user_id"],
        current=doc["current"],
        expires_at=doc["expires_at"],
        previous=tuple(doc.get("previous", ())),
        revoked=doc.get("revoked_at") is not None,
    )


class SessionStore:
    """The ``refresh_families`` collection."""

    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self.col = db["refresh_families"]

    async def create(self, family: Family, *, now: datetime) -> None:
        """Store a new family whose current token digest is ``family.current``."""
        await self.col.insert_one(
            {
                "_id": family.id,
                "user_id": family.user_id,
                "current": family.current,
                "previous": [],
                "created_at": now,
                "rotated_at": now,
                "expires_at": family.expires_at,
                "revoked_at": None,
            }
        )

    async def get(self, family_id: str) -> Family | None:
        """The family, or ``None``."""
        doc = await self.col.find_one({"_id": family_id})
        return _family(doc) if doc else None

    async def rotate(self, family_id: str, old: str, new: str, *, now: datetime) -> bool:
        """Replace the current digest ``old`` by ``new``; ``False`` if ``old`` is not current.

        One conditional single-document write: of two concurrent refreshes with the same
        token only one rotates; the other then sees its token as already used.
        """
        result = await self.col.update_one(
            {"_id": family_id, "current": old, "revoked_at": None},
            {
                "$set": {"current": new, "rotated_at": now},
                "$push": {"previous": {"$each": [old], "$slice": -KEEP_USED}},
            },
        )
        return result.modified_count == 1

    async def revoke(self, family_id: str, *, now: datetime, reason: str) -> bool:
        """Revoke the family; ``True`` if it was live."""
        result = await self.col.update_one(
            {"_id": family_id, "revoked_at": None},
            {"$set": {"revoked_at": now, "revoked_reason": reason}},
        )
        return result.modified_count == 1

    async def revoke_user(self, user_id: str, *, now: datetime, reason: str) -> int:
        """Revoke every live family of a user."""
        result = await self.col.update_many(
            {"user_id": user_id, "revoked_at": None},
            {"$set": {"revoked_at": now, "revoked_reason": reason}},
        )
        return result.modified_count

    async def purge(self, *, now: datetime) -> int:
        """Delete expired families (their tokens are refused anyway)."""
        result = await self.col.delete_many({"expires_at": {"$lt": now}})
        return result.deleted_count
