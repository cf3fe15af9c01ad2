"""User accounts: name, Argon2id hash, roles, disabled flag."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from peertrain.auth.domain.errors import UsernameTaken

__all__ = ["UserRecord", "UserStore"]

Doc = dict[str, Any]


@dataclass(frozen=True)
class UserRecord:
    """One account as stored."""

    id: str
    username: str
    password_hash: str
    roles: tuple[str, ...]
    created_at: datetime
    disabled: bool = False

    @classmethod
    def from_doc(cls, doc: Doc) -> UserRecord:
        """Build from a stored document."""
        return cls(
            id=doc["_id"],
            username=doc["username"],
            password_hash=doc["password_hash"],
            roles=tuple(doc.get("roles", ())),
            created_at=doc["created_at"],
            disabled=bool(doc.get("disabled", False)),
        )


class UserStore:
    """The ``users`` collection (unique ``username``)."""

    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self.col = db["users"]

    async def ensure_indexes(self) -> None:
        """Unique usernames."""
        await self.col.create_index([("username", ASCENDING)], unique=True, name="username")

    async def insert(self, user: UserRecord, *, event_id: str) -> None:
        """Store a new account; ``event_id`` marks its ``user.registered`` as pending.

        Raises
        ------
        UsernameTaken
            If the name is taken.
        """
        doc = {
            "_id": user.id,
            "username": user.username,
            "password_hash": user.password_hash,
            "roles": list(user.roles),
            "created_at": user.created_at,
            "disabled": user.disabled,
            "pending_event": event_id,
        }
        try:
            await self.col.insert_one(doc)
        except DuplicateKeyError:
            raise UsernameTaken(f"the username {user.username!r} is taken") from None

    async def event_recorded(self, user_id: str) -> None:
        """The account's ``user.registered`` is in the log."""
        await self.col.update_one({"_id": user_id}, {"$unset": {"pending_event": ""}})

    async def pending(self) -> list[tuple[UserRecord, str]]:
        """Accounts whose ``user.registered`` may not be in the log (a crash in between)."""
        cursor = self.col.find({"pending_event": {"$exists": True}})
        return [(UserRecord.from_doc(d), d["pending_event"]) async for d in cursor]

    async def by_username(self, username: str) -> UserRecord | None:
        """The account called ``username`` (canonical form)."""
        doc = await self.col.find_one({"username": username})
        return UserRecord.from_doc(doc) if doc else None

    async def get(self, user_id: str) -> UserRecord | None:
        """The account with this id."""
        doc = await self.col.find_one({"_id": user_id})
        return UserRecord.from_doc(doc) if doc else None

    async def set_password_hash(self, user_id: str, password_hash: str) -> None:
        """Replace the stored hash (re-hash with new costs, or a new admin password)."""
        await self.col.update_one({"_id": user_id}, {"$set": {"password_hash": password_hash}})

    async def set_roles(self, user_id: str, roles: tuple[str, ...]) -> None:
        """Replace the account's roles."""
        await self.col.update_one({"_id": user_id}, {"$set": {"roles": list(roles)}})

    async def mark_disabled(self, user_id: str) -> bool:
        """Set the disabled flag; ``True`` if it changed."""
        result = await self.col.update_one(
            {"_id": user_id, "disabled": {"$ne": True}}, {"$set": {"disabled": True}}
        )
        return result.modified_count > 0

    async def list(self, *, limit: int, offset: int) -> list[UserRecord]:
        """Accounts by creation time."""
        cursor = self.col.find({}).sort("created_at", ASCENDING).skip(offset).limit(limit)
        return [UserRecord.from_doc(d) async for d in cursor]
