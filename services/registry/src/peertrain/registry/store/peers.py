"""The durable copy of the read model in the registry's own database.

``peers``
    One small document per peer (its :class:`PeerRecord`), written when the peer's
    events change it: never per heartbeat.
``meta``
    ``{_id: "checkpoint", position}``: every event at or below ``position`` is in
    ``peers`` (start-up folds the log from there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from pymongo import ReplaceOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from peertrain.common.events.peers import DeviceSpecs
from peertrain.registry.domain.peer import PeerRecord

__all__ = ["ReadModel", "ReadModelStore", "from_doc", "to_doc"]

Doc = dict[str, Any]
_CHECKPOINT = "checkpoint"


def _utc(value: Any) -> datetime | None:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value if isinstance(value, datetime) else None


def to_doc(record: PeerRecord) -> Doc:
    """Record -> document (``_id`` is the peer id)."""
    return {
        "_id": record.peer_id,
        "owner_id": record.owner_id,
        "name": record.name,
        "enrolled": record.enrolled,
        "registered": record.registered,
        "queue": record.queue,
        "specs": record.specs.model_dump(mode="json") if record.specs else None,
        "shared": record.shared,
        "disabled": record.disabled,
        "online": record.online,
        "removed": record.removed,
        "interval_s": record.interval_s,
        "last_seen": record.last_seen,
        "offline_reason": record.offline_reason,
        "enrolled_at": record.enrolled_at,
        "updated_at": record.updated_at,
        "version": record.version,
        "position": record.position,
    }


def from_doc(doc: Mapping[str, Any]) -> PeerRecord:
    """Document -> record."""
    specs = doc.get("specs")
    return PeerRecord(
        peer_id=doc["_id"],
        owner_id=doc.get("owner_id", ""),
        name=doc.get("name", ""),
        enrolled=bool(doc.get("enrolled")),
        registered=bool(doc.get("registered")),
        queue=doc.get("queue"),
        specs=DeviceSpecs.model_validate(specs) if specs else None,
        shared=bool(doc.get("shared")),
        disabled=bool(doc.get("disabled")),
        online=bool(doc.get("online")),
        removed=bool(doc.get("removed")),
        interval_s=doc.get("interval_s"),
        last_seen=_utc(doc.get("last_seen")),
        offline_reason=doc.get("offline_reason"),
        enrolled_at=_utc(doc.get("enrolled_at")),
        updated_at=_utc(doc.get("updated_at")),
        version=int(doc.get("version", 0)),
        position=int(doc.get("position", 0)),
    )


class ReadModel(Protocol):
    """The durable copy of the peer directory (:class:`ReadModelStore`, or one in memory)."""

    async def load(self) -> tuple[list[PeerRecord], int]:
        """Every record, and the checkpoint position."""
        ...

    async def save(self, records: Iterable[PeerRecord], *, checkpoint: int | None) -> int:
        """Upsert ``records``, then move the checkpoint."""
        ...

    async def insert_all(self, records: list[PeerRecord], *, checkpoint: int) -> None:
        """Fill an empty copy and set the checkpoint."""
        ...

    async def drop(self) -> None:
        """Forget the copy."""
        ...


class ReadModelStore:
    """The ``peers`` and ``meta`` collections of the registry's database."""

    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self.peers: AsyncCollection[Doc] = db["peers"]
        self.meta: AsyncCollection[Doc] = db["meta"]

    async def load(self) -> tuple[list[PeerRecord], int]:
        """Every record, and the checkpoint position."""
        records = [from_doc(d) async for d in self.peers.find({})]
        meta = await self.meta.find_one({"_id": _CHECKPOINT})
        return records, int(meta["position"]) if meta else 0

    async def save(self, records: Iterable[PeerRecord], *, checkpoint: int | None) -> int:
        """Upsert ``records``, then move the checkpoint; returns how many were written."""
        ops = [ReplaceOne({"_id": r.peer_id}, to_doc(r), upsert=True) for r in records]
        if ops:
            await self.peers.bulk_write(ops, ordered=False)
        if checkpoint is not None:
            await self.meta.replace_one(
                {"_id": _CHECKPOINT}, {"_id": _CHECKPOINT, "position": checkpoint}, upsert=True
            )
        return len(ops)

    async def insert_all(self, records: list[PeerRecord], *, checkpoint: int) -> None:
        """Fill an empty ``peers`` collection (replay) and set the checkpoint."""
        for start in range(0, len(records), 1000):
            await self.peers.insert_many([to_doc(r) for r in records[start : start + 1000]])
        await self.save((), checkpoint=checkpoint)

    async def drop(self) -> None:
        """Forget the read model (``peers`` and the checkpoint)."""
        await self.peers.drop()
        await self.meta.delete_many({"_id": _CHECKPOINT})
