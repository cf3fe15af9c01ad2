"""The outbox: which appended events the bus has not confirmed yet.

Publishing does not read the log. The appending process hands its events to its relay
in memory, right after the log insert (:meth:`EventLog.on_append`), and the relay
records each confirmed publication with an insert. Two small collections beside the log
make that safe against a writer that dies at any point:

``<log>_outbox_pending``
    One marker per append, ``{_id: first event id, producer, ids, at}``, inserted
    *before* the events go into the log.
``<log>_outbox_done``
    ``{_id: event id, at}``, inserted by the relay once the broker confirmed the event
    (or once it was left in the log only, see the relay's unroutable grace).

Nothing on the append or publish path queries, updates or deletes: inserts only. A
rare sweep (:meth:`Outbox.sweep`, every ``sweep_interval_s`` in each relay) reads the
two collections, which hold only what was appended since the previous sweep, and
settles markers older than a grace period: events found in the log but never confirmed
are published late (a writer died between the log insert and the broker's confirm);
ids not in the log never happened; a settled marker and its done records are deleted.
So an appended event can never miss the bus; at worst it is published twice, which
idempotent consumers absorb.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from peertrain.common.events import RecordedEvent, from_document

__all__ = ["Outbox", "SweepResult"]

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


@dataclass
class SweepResult:
    """What one sweep found.

    Attributes
    ----------
    republish
        Events in the log that were never confirmed: to publish (late).
    settled
        Markers deleted (every event of theirs confirmed, or never appended).
    pending
        Events appended and not confirmed yet, the ones to republish included.
    """

    republish: list[RecordedEvent] = field(default_factory=list)
    settled: int = 0
    pending: int = 0


class Outbox:
    """Unpublished events of one log (see the module docstring for the protocol)."""

    def __init__(self, db: AsyncDatabase[Doc], log_collection: str) -> None:
        self.markers: AsyncCollection[Doc] = db[f"{log_collection}_outbox_pending"]
        self.done: AsyncCollection[Doc] = db[f"{log_collection}_outbox_done"]
        self.log: AsyncCollection[Doc] = db[log_collection]

    async def ensure_indexes(self) -> None:
        """Indexes for the sweep's reads (MongoDB; both collections stay small)."""
        await self.markers.create_index([("producer", ASCENDING)], name="producer")

    # -- the append path: inserts only --------------------------------------------------

    async def stage(self, marker_id: str, producer: str, ids: Sequence[str]) -> str:
        """Before the log insert: one marker for the append (its first event's id, its
        producer, its events' ids); returns its id."""
        marker = {"_id": marker_id, "producer": producer, "ids": list(ids), "at": datetime.now(UTC)}
        await _insert_ignoring_duplicates(self.markers, [marker])
        return marker_id

    async def unstage(self, marker_id: str) -> None:
        """The append wrote nothing: drop its marker (an equality delete)."""
        await self.markers.delete_one({"_id": marker_id})

    async def confirmed(self, event_ids: Sequence[str]) -> None:
        """The broker confirmed these (or they are left in the log only)."""
        now = datetime.now(UTC)
        await _insert_ignoring_duplicates(self.done, [{"_id": i, "at": now} for i in event_ids])

    # -- the sweep: rare, reads the two small collections ------------------------------

    async def sweep(
        self,
        *,
        producer: str | None,
        older_than_s: float,
        absent_after_s: float = 30.0,
        in_flight: Collection[str] = (),
    ) -> SweepResult:
        """Settle markers older than ``older_than_s`` (all markers when 0).

        Parameters
        ----------
        producer
            Only this producer's markers (``None``: every producer's).
        older_than_s
            Markers at least this old are looked at: their events found in the log and
            not confirmed are returned to publish.
        absent_after_s
            An id not in the log counts as never appended only when its marker is at
            least this old: a younger one may belong to an append still in progress.
        in_flight
            Event ids the calling relay holds in memory: neither republished nor settled.
        """
        # Done records first: a record's marker was inserted before it, so it is seen
        # below unless settled. Every producer's markers: done records are shared, and
        # one another producer's marker still refers to must not be pruned here.
        done = {d["_id"]: d["at"] async for d in self.done.find({})}
        markers = [m async for m in self.markers.find({})]
        now = datetime.now(UTC)
        cutoff = now - timedelta(seconds=older_than_s)
        absent_cutoff = now - timedelta(seconds=max(older_than_s, absent_after_s))
        result = SweepResult()
        settled_markers: list[str] = []
        settled_ids: list[str] = []
        referenced: set[str] = set()
        for marker in markers:
            ids = [str(i) for i in marker["ids"]]
            referenced.update(ids)
            if producer is not None and marker["producer"] != producer:
                continue
            open_ids = [i for i in ids if i not in done]
            result.pending += len(open_ids)
            if _aware(marker["at"]) > cutoff:
                continue
            unsettled = False
            for event_id in open_ids:
                if event_id in in_flight:
                    unsettled = True
                    continue
                doc = await self.log.find_one({"_id": event_id})  # equality: an index lookup
                if doc is not None:
                    result.republish.append(from_document(doc))
                    unsettled = True
                elif _aware(marker["at"]) > absent_cutoff:
                    unsettled = True  # its append may still be in progress
                else:
                    result.pending -= 1  # never appended: nothing to publish
            if not unsettled:
                settled_markers.append(str(marker["_id"]))
                settled_ids += [i for i in ids if i in done]
        # Done records nobody refers to any more (their marker was settled by another
        # relay, or they outlived a crash between the two deletes).
        long_ago = now - timedelta(seconds=max(older_than_s, 1.0) * 4)
        settled_ids += [
            i for i, at in done.items() if i not in referenced and _aware(at) < long_ago
        ]
        if settled_markers:
            await self.markers.delete_many({"_id": {"$in": settled_markers}})
        if settled_ids:
            await self.done.delete_many({"_id": {"$in": settled_ids}})
        result.settled = len(settled_markers)
        result.republish.sort(key=lambda e: e.position)
        return result

    async def count(self, *, producer: str | None = None) -> int:
        """Events appended (or being appended) and not confirmed yet (a small read)."""
        query: Doc = {} if producer is None else {"producer": producer}
        done = {d["_id"] async for d in self.done.find({}, {"_id": 1})}
        markers = [m async for m in self.markers.find(query)]
        return sum(1 for m in markers for i in m["ids"] if i not in done)


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)
