"""Refresh-token families (one per login session), holding digests only.

FerretDB 1.x runs a conditional update as a query, then a write of the whole document:
two requests can both find a family's current digest and both rotate it, and a
revocation written between another request's read and write is lost. What it does
guarantee is the unique ``_id``. So each one-way step of a family is first *claimed*
by inserting a document in ``refresh_claims`` (``used:<digest>`` when a token is
spent, ``revoked:<family>`` when the family is revoked): only one request can insert
it, and only that one goes on to write the family. Real MongoDB gives the same
answers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

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
        rotated_at=doc.get("rotated_at"),
    )


def _used(digest: str) -> str:
    return f"used:{digest}"


def _revoked(family_id: str) -> str:
    return f"revoked:{family_id}"


class SessionStore:
    """The ``refresh_families`` collection."""

    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self.col = db["refresh_families"]
        self.claims = db["refresh_claims"]

    async def _claim(self, claim_id: str, *, family_id: str, now: datetime, **extra: Any) -> bool:
        """Insert the claim ``claim_id``: ``True`` for the one caller that did."""
        family = await self.col.find_one({"_id": family_id}, {"expires_at": 1})
        expires_at = family["expires_at"] if family else now
        try:
            await self.claims.insert_one(
                {
                    "_id": claim_id,
                    "family_id": family_id,
                    "at": now,
                    "expires_at": expires_at,
                    **extra,
                }
            )
        except DuplicateKeyError:
            return False
        return True

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
        """Replace the current digest ``old`` by ``new``; ``False`` if ``old`` is not
        current, or another request spent it first.

        ``old`` is spent by a unique insert first (``used:<old>``), so of any number of
        concurrent refreshes with one token exactly one rotates, on every store. A
        revocation that raced the write (and may have been overwritten by it) is found
        by its own claim and written again; the rotation then counts as refused.
        """
        if not await self._claim(_used(old), family_id=family_id, now=now):
            return False
        result = await self.col.update_one(
            {"_id": family_id, "current": old, "revoked_at": None},
            {
                "$set": {"current": new, "rotated_at": now},
                "$push": {"previous": {"$each": [old], "$slice": -KEEP_USED}},
            },
        )
        if result.modified_count != 1:
            return False
        revocation = await self.claims.find_one({"_id": _revoked(family_id)})
        if revocation is not None:
            reason = str(revocation.get("reason", "revoked"))
            await self._write_revoked(family_id, at=revocation["at"], reason=reason)
            return False
        return True

    async def revoke(self, family_id: str, *, now: datetime, reason: str) -> bool:
        """Revoke the family; ``True`` for the one call that revoked a live family."""
        claimed = await self._claim(
            _revoked(family_id), family_id=family_id, now=now, reason=reason
        )
        if not claimed:
            return False
        return await self._write_revoked(family_id, at=now, reason=reason)

    async def _write_revoked(self, family_id: str, *, at: datetime, reason: str) -> bool:
        result = await self.col.update_one(
            {"_id": family_id, "revoked_at": None},
            {"$set": {"revoked_at": at, "revoked_reason": reason}},
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
        """Delete expired families (their tokens are refused anyway) and their claims."""
        result = await self.col.delete_many({"expires_at": {"$lt": now}})
        await self.claims.delete_many({"expires_at": {"$lt": now}})
        return result.deleted_count
