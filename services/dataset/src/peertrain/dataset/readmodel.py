"""The read model: one small document per dataset, in the service's own database (what
the routes list and read).

The log is the truth; this collection follows it. Every write is guarded by the
event's ``seq`` (applied only over an older version), so applying an event twice, late,
or out of order never moves a document backwards, and the collection can be rebuilt
from the log at any time (:func:`replay`). Large things (the feature spec, the preview)
stay in the bucket and the log; documents keep what a listing needs.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from pymongo import ASCENDING, DESCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from peertrain.common.clock import SYSTEM_CLOCK, Clock
from peertrain.common.eventlog import EventLog
from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import (
    DATASET_DELETED,
    DATASET_REJECTED,
    DATASET_UPLOADED,
    DATASET_VALIDATED,
    DatasetDeleted,
    DatasetRejected,
    DatasetUploaded,
    DatasetValidated,
)
from peertrain.dataset.domain.quota import Usage

__all__ = [
    "INLINE_SCHEMA_COLUMNS",
    "LIFECYCLE_EVENTS",
    "Change",
    "DatasetReadModel",
    "DatasetViews",
    "MemoryReadModel",
    "change_of",
    "replay",
]

Doc = dict[str, Any]

INLINE_SCHEMA_COLUMNS = 256
"""Up to this many columns, a document carries the schema itself."""

LIFECYCLE_EVENTS = (DATASET_UPLOADED, DATASET_VALIDATED, DATASET_REJECTED, DATASET_DELETED)


def _uploaded(data: DatasetUploaded, at: datetime) -> Doc:
    return {
        "owner_id": data.owner_id,
        "name": data.name,
        "filename": data.filename,
        "size": data.raw.size,
        "sha256": data.raw.sha256,
        "status": "validating",
        "error": None,
        "label_column": data.label_column,
        "holdout_fraction": data.holdout_fraction,
        "holdout_seed": data.holdout_seed,
        "missing_values": list(data.missing_values) if data.missing_values is not None else None,
        "created_at": at,
    }


def _validated(data: DatasetValidated) -> Doc:
    spec = data.feature_spec
    return {
        "status": "validated",
        "error": None,
        "kind": data.kind,
        "rows": data.rows,
        "train_rows": data.train_rows,
        "holdout_rows": data.holdout_rows,
        "columns": len(data.columns),
        # Wide tables keep their schema in the bucket (schema.json), not in the document.
        "schema": (
            [c.model_dump(mode="json") for c in data.columns]
            if len(data.columns) <= INLINE_SCHEMA_COLUMNS
            else None
        ),
        "label_column": data.label_column,
        "classes": list(data.classes),
        "class_counts": list(data.class_counts),
        "input_shape": list(spec.input_shape),
        "image": spec.image.model_dump(mode="json") if spec.image is not None else None,
        "preview_key": data.preview.key,
        "missing_values": list(spec.missing_tokens) if data.kind == "table" else None,
        "notes": list(data.notes),
    }


def _rejected(data: DatasetRejected) -> Doc:
    return {
        "status": "rejected",
        "error": {"code": data.code, "message": data.message, "detail": data.detail},
    }


class Change(NamedTuple):
    """What one lifecycle event writes on its dataset's document."""

    dataset_id: str
    fields: Doc
    """The fields to set (``version`` and ``updated_at`` included)."""
    creates: bool
    """Whether it makes the document (the upload), else it only updates one."""


def change_of(event: RecordedEvent, *, now: datetime) -> Change | None:
    """The write ``event`` makes on the read model (``None``: not a lifecycle event).

    Applied only over a document at an older ``version`` than ``event.seq``.
    """
    data = event.data
    if isinstance(data, DatasetUploaded):
        fields = _uploaded(data, event.occurred_at)
        dataset_id = data.dataset_id
    elif isinstance(data, DatasetValidated):
        fields, dataset_id = _validated(data), data.dataset_id
    elif isinstance(data, DatasetRejected):
        fields, dataset_id = _rejected(data), data.dataset_id
    elif isinstance(data, DatasetDeleted):
        fields, dataset_id = {"status": "deleted"}, data.dataset_id
    else:
        return None
    fields.update(version=event.seq, updated_at=now)
    return Change(dataset_id, fields, isinstance(data, DatasetUploaded))


class DatasetReadModel(Protocol):
    """The read model's operations (:class:`DatasetViews` on MongoDB,
    :class:`MemoryReadModel` in memory)."""

    async def ensure_indexes(self) -> None: ...

    async def apply(self, event: RecordedEvent) -> None: ...

    async def get(self, dataset_id: str) -> Doc | None: ...

    async def usage(self, owner_id: str) -> Usage: ...

    async def list_for(self, owner_id: str, *, limit: int, offset: int) -> list[Doc]: ...


class MemoryReadModel:
    """The read model in memory (unit tests, the simulation), with
    :class:`DatasetViews`' writes (:func:`change_of`, version-guarded) and reads."""

    def __init__(self, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.docs: dict[str, Doc] = {}
        self.clock = clock

    async def ensure_indexes(self) -> None:
        """Nothing to index."""

    async def apply(self, event: RecordedEvent) -> None:
        """Fold one lifecycle event into its document (idempotent, version-guarded)."""
        change = change_of(event, now=self.clock.now())
        if change is None:
            return
        doc = self.docs.get(change.dataset_id)
        if doc is None:
            if change.creates:
                self.docs[change.dataset_id] = {"_id": change.dataset_id, **change.fields}
        elif doc.get("version", 0) < event.seq:
            doc.update(change.fields)

    async def get(self, dataset_id: str) -> Doc | None:
        """One dataset's document (deleted ones included)."""
        doc = self.docs.get(dataset_id)
        return dict(doc) if doc is not None else None

    async def usage(self, owner_id: str) -> Usage:
        """What the owner keeps (as :meth:`DatasetViews.usage` counts it)."""
        kept = [
            d for d in self.docs.values() if d["owner_id"] == owner_id and d["status"] != "deleted"
        ]
        size = sum(int(d.get("size") or 0) for d in kept if d["status"] != "rejected")
        return Usage(datasets=len(kept), bytes=size)

    async def list_for(self, owner_id: str, *, limit: int, offset: int) -> list[Doc]:
        """The owner's datasets, newest first (deleted ones left out)."""
        mine = [
            dict(d)
            for d in self.docs.values()
            if d["owner_id"] == owner_id and d["status"] != "deleted"
        ]
        mine.sort(key=lambda d: d["created_at"], reverse=True)
        return mine[offset : offset + limit]


class DatasetViews:
    """The ``datasets`` collection: what ``GET /api/datasets`` answers from."""

    def __init__(self, db: AsyncDatabase[Doc], *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.docs: AsyncCollection[Doc] = db["datasets"]
        self.clock = clock

    async def ensure_indexes(self) -> None:
        """Indexes (FerretDB scans anyway; they pay off on MongoDB)."""
        await self.docs.create_index([("owner_id", ASCENDING), ("created_at", DESCENDING)])

    async def apply(self, event: RecordedEvent) -> None:
        """Fold one lifecycle event into its document (idempotent, version-guarded)."""
        change = change_of(event, now=self.clock.now())
        if change is None:
            return
        guard = {"_id": change.dataset_id, "version": {"$lt": event.seq}}
        # A duplicate key means the document is already at this version or later.
        with contextlib.suppress(DuplicateKeyError):
            await self.docs.update_one(guard, {"$set": change.fields}, upsert=change.creates)

    async def get(self, dataset_id: str) -> Doc | None:
        """One dataset's document (deleted ones included)."""
        return await self.docs.find_one({"_id": dataset_id})

    async def usage(self, owner_id: str) -> Usage:
        """What the owner keeps: datasets not deleted, and the uploaded bytes of those
        not rejected (a rejection removes the objects). One equality lookup, over as
        many documents as the quota lets a user keep."""
        count = size = 0
        cursor = self.docs.find(
            {"owner_id": owner_id, "status": {"$ne": "deleted"}}, {"size": 1, "status": 1}
        )
        async for doc in cursor:
            count += 1
            if doc.get("status") != "rejected":
                size += int(doc.get("size") or 0)
        return Usage(datasets=count, bytes=size)

    async def list_for(self, owner_id: str, *, limit: int, offset: int) -> list[Doc]:
        """The owner's datasets, newest first (deleted ones left out)."""
        cursor = (
            self.docs.find({"owner_id": owner_id, "status": {"$ne": "deleted"}})
            .sort("created_at", DESCENDING)
            .skip(offset)
            .limit(limit)
        )
        return [doc async for doc in cursor]


async def replay(views: DatasetReadModel, log: EventLog) -> int:
    """Apply every lifecycle event in the log (start-up catch-up; idempotent)."""
    count = 0
    async for event in log.read_all(types=LIFECYCLE_EVENTS):
        await views.apply(event)
        count += 1
    return count
