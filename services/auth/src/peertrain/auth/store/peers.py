"""Enrollment tokens (digests) and enrolled peers (secret digests).

An enrollment token is used once. FerretDB 1.x runs a conditional update as a query,
then a write, so two redemptions could both find the token unused; the one that counts
is the one that inserts its claim (``enrollment_claims``, ``_id`` the enrollment's):
a unique insert, atomic on every store.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

__all__ = ["EnrollmentRecord", "PeerRecord", "PeerStore"]

Doc = dict[str, Any]


@dataclass(frozen=True)
class EnrollmentRecord:
    """A one-time enrollment token, as stored (without the token)."""

    id: str
    owner_id: str
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None = None
    peer_id: str | None = None

    @classmethod
    def from_doc(cls, doc: Doc) -> EnrollmentRecord:
        """Build from a stored document."""
        return cls(
            id=doc["_id"],
            owner_id=doc["owner_id"],
            created_at=doc["created_at"],
            expires_at=doc["expires_at"],
            used_at=doc.get("used_at"),
            peer_id=doc.get("peer_id"),
        )


@dataclass(frozen=True)
class PeerRecord:
    """An enrolled peer, as stored (the secret only as a digest)."""

    id: str
    owner_id: str
    name: str
    secret_hash: str
    enrolled_at: datetime
    removed_at: datetime | None = None
    """When its ``peer.removed`` reached auth: it gets no token from then on."""

    @classmethod
    def from_doc(cls, doc: Doc) -> PeerRecord:
        """Build from a stored document."""
        return cls(
            id=doc["_id"],
            owner_id=doc["owner_id"],
            name=doc["name"],
            secret_hash=doc["secret_hash"],
            enrolled_at=doc["enrolled_at"],
            removed_at=doc.get("removed_at"),
        )


class PeerStore:
    """The ``enrollments``, ``enrollment_claims`` and ``peers`` collections."""

    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self.enrollments = db["enrollments"]
        self.claims = db["enrollment_claims"]
        self.peers = db["peers"]

    async def ensure_indexes(self) -> None:
        """One enrollment per token digest."""
        await self.enrollments.create_index(
            [("token_hash", ASCENDING)], unique=True, name="token_hash"
        )

    async def create_enrollment(self, record: EnrollmentRecord, *, token_hash: str) -> None:
        """Store a new enrollment token's digest."""
        await self.enrollments.insert_one(
            {
                "_id": record.id,
                "token_hash": token_hash,
                "owner_id": record.owner_id,
                "created_at": record.created_at,
                "expires_at": record.expires_at,
                "used_at": None,
                "peer_id": None,
            }
        )

    async def enrollment_by_token(self, token_hash: str) -> EnrollmentRecord | None:
        """The enrollment with this token digest."""
        doc = await self.enrollments.find_one({"token_hash": token_hash})
        return EnrollmentRecord.from_doc(doc) if doc else None

    async def claim_enrollment(
        self, token_hash: str, *, peer_id: str, now: datetime
    ) -> EnrollmentRecord | None:
        """Use the token once: ``None`` if it is unknown, used or expired, or another
        redemption claimed it first."""
        doc = await self.enrollments.find_one({"token_hash": token_hash})
        if doc is None or doc.get("used_at") is not None or doc["expires_at"] <= now:
            return None
        claim = {"_id": doc["_id"], "peer_id": peer_id, "at": now, "expires_at": doc["expires_at"]}
        try:
            await self.claims.insert_one(claim)
        except DuplicateKeyError:
            return None
        await self.enrollments.update_one(
            {"_id": doc["_id"]}, {"$set": {"used_at": now, "peer_id": peer_id}}
        )
        return EnrollmentRecord.from_doc({**doc, "used_at": now, "peer_id": peer_id})

    async def get_enrollment(self, enrollment_id: str) -> EnrollmentRecord | None:
        """One enrollment by id."""
        doc = await self.enrollments.find_one({"_id": enrollment_id})
        return EnrollmentRecord.from_doc(doc) if doc else None

    async def list_enrollments(
        self, owner_id: str, *, limit: int, offset: int = 0
    ) -> list[EnrollmentRecord]:
        """A user's enrollments, newest first (``limit`` of them from ``offset``)."""
        cursor = (
            self.enrollments.find({"owner_id": owner_id})
            .sort("created_at", -1)
            .skip(offset)
            .limit(limit)
        )
        return [EnrollmentRecord.from_doc(d) async for d in cursor]

    async def purge_enrollments(self, *, before: datetime) -> int:
        """Delete enrollments that expired before ``before`` (and their claims)."""
        result = await self.enrollments.delete_many({"expires_at": {"$lt": before}})
        await self.claims.delete_many({"expires_at": {"$lt": before}})
        return result.deleted_count

    async def insert_peer(self, peer: PeerRecord, *, event_id: str) -> None:
        """Store a new peer; ``event_id`` marks its ``peer.enrolled`` as pending."""
        await self.peers.insert_one(
            {
                "_id": peer.id,
                "owner_id": peer.owner_id,
                "name": peer.name,
                "secret_hash": peer.secret_hash,
                "enrolled_at": peer.enrolled_at,
                "pending_event": event_id,
            }
        )

    async def event_recorded(self, peer_id: str) -> None:
        """The peer's ``peer.enrolled`` is in the log."""
        await self.peers.update_one({"_id": peer_id}, {"$unset": {"pending_event": ""}})

    async def mark_removed(self, peer_id: str, *, at: datetime) -> None:
        """The peer is removed for good (idempotent: the first time stays)."""
        await self.peers.update_one(
            {"_id": peer_id, "removed_at": {"$exists": False}}, {"$set": {"removed_at": at}}
        )

    async def pending(self) -> list[tuple[PeerRecord, str]]:
        """Peers whose ``peer.enrolled`` may not be in the log."""
        cursor = self.peers.find({"pending_event": {"$exists": True}})
        return [(PeerRecord.from_doc(d), d["pending_event"]) async for d in cursor]

    async def get_peer(self, peer_id: str) -> PeerRecord | None:
        """One peer by id."""
        doc = await self.peers.find_one({"_id": peer_id})
        return PeerRecord.from_doc(doc) if doc else None

    async def list_peers(self, owner_id: str, *, limit: int, offset: int = 0) -> list[PeerRecord]:
        """A user's peers, oldest first (``limit`` of them from ``offset``)."""
        cursor = (
            self.peers.find({"owner_id": owner_id})
            .sort("enrolled_at", ASCENDING)
            .skip(offset)
            .limit(limit)
        )
        return [PeerRecord.from_doc(d) async for d in cursor]
