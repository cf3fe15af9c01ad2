"""The outbox: what the log holds but the bus has not confirmed yet.

Two small collections, written with inserts only on the append path (on FerretDB 1.x
with SQLite, inserts are the one cheap operation: every query and update scans the
whole collection, indexes only enforce uniqueness):

``<log>_outbox_pending``
    A tiny marker ``{_id: event id, producer, created_at}``, inserted *before* the
    event goes into the log.
``<log>_outbox``
    A copy of the event, inserted *after* it is in the log: it is ready to publish.

The relay publishes ``outbox`` records in position order, then deletes the marker and
the record. A writer that dies between the log insert and the outbox insert leaves a
marker with no record: :meth:`Outbox.resolve_stale` finds it after a grace period and
re-creates the record from the log (or drops the marker if the append never happened).
So an appended event can never miss the bus; at worst it is published twice, which
idempotent consumers absorb.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from peertrain.common.events import RecordedEvent, from_document

__all__ = ["Outbox"]

Doc = dict[str, Any]
_DUPLICATE_KEY = 11000


async def _insert_ignoring_duplicates(collection: AsyncCollection[Doc], docs: list[Doc]) -> None:
    if not docs:
        return
    try:
        await collection.insert_many(docs, ordered=False)
    except BulkWriteError as exc:
        if any(e.get("code") != _DUPLICATE_KEY for e in exc.details.get("writeErrors", [])):
            raise


class Outbox:
    """Unpublished events of one log (see the module docstring for the protocol)."""

    def __init__(self, db: AsyncDatabase[Doc], log_collection: str) -> None:
        self.records: AsyncCollection[Doc] = db[f"{log_collection}_outbox"]
        self.markers: AsyncCollection[Doc] = db[f"{log_collection}_outbox_pending"]
        self.log: AsyncCollection[Doc] = db[log_collection]

    async def ensure_indexes(self) -> None:
        """Indexes for MongoDB (FerretDB keeps them but scans anyway)."""
        await self.records.create_index(
            [("producer", ASCENDING), ("position", ASCENDING)], name="producer_position"
        )
        await self.markers.create_index([("created_at", ASCENDING)], name="created_at")

    async def stage(self, docs: Sequence[Doc]) -> None:
        """Before the log insert: leave a marker per event."""
        now = datetime.now(UTC)
        await _insert_ignoring_duplicates(
            self.markers, [{"_id": d["_id"], "producer": d["producer"], "at": now} for d in docs]
        )

    async def ready(self, docs: Sequence[Doc]) -> None:
        """After the log insert: the events may be published."""
        await _insert_ignoring_duplicates(
            self.records,
            [
                {"_id": d["_id"], "producer": d["producer"], "position": d["position"], "event": d}
                for d in docs
            ],
        )

    async def unstage(self, event_ids: Sequence[str]) -> None:
        """The append did not happen: drop its markers."""
        if event_ids:
            await self.markers.delete_many({"_id": {"$in": list(event_ids)}})

    async def next_batch(self, *, producer: str | None, limit: int) -> list[RecordedEvent]:
        """The oldest publishable events (not backing off), in position order."""
        now = datetime.now(UTC)
        query: Doc = {"$or": [{"retry_at": {"$exists": False}}, {"retry_at": {"$lte": now}}]}
        if producer is not None:
            query["producer"] = producer
        cursor = self.records.find(query).sort("position", 1).limit(limit)
        return [from_document(d["event"]) async for d in cursor]

    async def count(self, *, producer: str | None = None) -> int:
        """Events staged or ready, not yet confirmed."""
        query: Doc = {} if producer is None else {"producer": producer}
        ready = await self.records.count_documents(query)
        staged_only = await self.markers.count_documents(query)
        return max(ready, staged_only)

    async def published(self, event_ids: Sequence[str]) -> None:
        """The broker confirmed these: forget them (marker first, see resolve_stale)."""
        if event_ids:
            ids = list(event_ids)
            await self.markers.delete_many({"_id": {"$in": ids}})
            await self.records.delete_many({"_id": {"$in": ids}})

    async def defer(self, event_ids: Sequence[str], *, delay_s: float) -> None:
        """Skip these for ``delay_s`` (unroutable: nobody is bound to their type yet)."""
        if event_ids:
            await self.records.update_many(
                {"_id": {"$in": list(event_ids)}},
                {
                    "$set": {"retry_at": datetime.now(UTC) + timedelta(seconds=delay_s)},
                    "$inc": {"attempts": 1},
                },
            )

    async def resolve_stale(self, *, older_than_s: float) -> int:
        """Settle markers older than ``older_than_s`` that have no ready record.

        Their event is looked up in the log: found, it is made ready (published late);
        not found, the append never happened and the marker goes. Returns how many
        markers were settled.
        """
        cutoff = datetime.now(UTC) - timedelta(seconds=older_than_s)
        old = [d["_id"] async for d in self.markers.find({"at": {"$lt": cutoff}}, {"_id": 1})]
        if not old:
            return 0
        ready = {d["_id"] async for d in self.records.find({"_id": {"$in": old}}, {"_id": 1})}
        orphans = [i for i in old if i not in ready]
        if not orphans:
            return 0
        found = [d async for d in self.log.find({"_id": {"$in": orphans}})]
        await self.ready(found)
        missing = sorted(set(orphans) - {d["_id"] for d in found})
        await self.unstage(missing)
        return len(orphans)
