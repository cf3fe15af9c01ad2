"""The append-only event log on MongoDB (PyMongo's async API).

Storage model
-------------
``events`` holds the log. A unique index on (``stream``, ``seq``) gives optimistic
concurrency: appending at a position someone else took raises
:class:`ConcurrencyError`. ``_id`` is the event id, which makes an append idempotent:
appending the very same event again is a no-op.

Every event also passes through the :class:`~.outbox.Outbox` (written before and after
the log insert, inserts only), from which the relay publishes it. The outbox is kept
apart from the log, not as a ``published_at`` flag on each event, because FerretDB 1.x
on SQLite answers every query except inserts by scanning the whole collection: what
the relay polls must stay small, while the log grows.

A global ``position`` comes from :class:`~.positions.PositionAllocator`, so "read
everything from position P" works for replays and catch-up. Positions increase with
append order but may have gaps (an append that lost a race keeps its numbers).
No multi-document transactions are used, so this works on FerretDB and on MongoDB.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError, DuplicateKeyError

from peertrain.common.errors import Conflict
from peertrain.common.events import NewEvent, RecordedEvent, from_document, to_document
from peertrain.common.metrics import EVENTS_APPENDED

from .outbox import Outbox
from .positions import PositionAllocator

__all__ = ["ConcurrencyError", "EventLog"]

Doc = dict[str, Any]


class ConcurrencyError(Conflict):
    """Someone else appended to the stream first: reload it and decide again."""

    code = "concurrency_conflict"

    def __init__(self, stream: str, expected_version: int) -> None:
        super().__init__(
            f"stream {stream!r} moved past version {expected_version}",
            detail={"stream": stream, "expected_version": expected_version},
        )
        self.stream = stream
        self.expected_version = expected_version


class EventLog:
    """Append, read and track publication of events.

    Parameters
    ----------
    db
        The database holding the log (shared by all services).
    collection
        Collection name; tests use their own to stay isolated.
    """

    def __init__(self, db: AsyncDatabase[Doc], collection: str = "events") -> None:
        self.db = db
        self.events: AsyncCollection[Doc] = db[collection]
        self.positions = PositionAllocator(db, collection)
        self.outbox = Outbox(db, collection)
        self._appended = asyncio.Event()

    async def ensure_indexes(self) -> None:
        """Create the log's indexes (idempotent)."""
        await self.events.create_index(
            [("stream", ASCENDING), ("seq", ASCENDING)], unique=True, name="stream_seq"
        )
        await self.events.create_index([("position", ASCENDING)], name="position")
        await self.events.create_index([("correlation_id", ASCENDING)], name="correlation")
        await self.outbox.ensure_indexes()

    # -- writing ----------------------------------------------------------------------

    async def append(
        self, stream: str, events: Sequence[NewEvent], *, expected_version: int
    ) -> list[RecordedEvent]:
        """Append ``events`` to ``stream`` right after ``expected_version``.

        Parameters
        ----------
        stream
            ``<aggregate>:<id>``.
        events
            The new events, in order; they get ``seq`` expected_version+1, +2, ...
        expected_version
            The ``seq`` of the last event the caller saw (0 for a new stream).

        Returns
        -------
        list of RecordedEvent
            The events as stored (for an idempotent re-append: as first stored).

        Raises
        ------
        ConcurrencyError
            If another writer took one of these positions first.
        """
        if not events:
            return []
        if expected_version < 0:
            raise ValueError("expected_version must be >= 0")
        positions = await self.positions.allocate(len(events))
        recorded = [
            RecordedEvent(
                **e.model_dump(exclude={"data"}),
                data=e.data,
                stream=stream,
                seq=expected_version + i + 1,
                position=positions[i],
            )
            for i, e in enumerate(events)
        ]
        docs = [to_document(r) for r in recorded]
        await self.outbox.stage(docs)
        try:
            if len(docs) == 1:
                await self.events.insert_one(docs[0])
            else:
                await self.events.insert_many(docs, ordered=True)
        except (DuplicateKeyError, BulkWriteError) as exc:
            inserted = exc.details.get("nInserted", 0) if isinstance(exc, BulkWriteError) else 0
            return await self._resolve_duplicate(stream, recorded, inserted, expected_version)
        await self.outbox.ready(docs)
        self._appended.set()
        EVENTS_APPENDED.labels(producer=recorded[0].producer).inc(len(recorded))
        return recorded

    async def _resolve_duplicate(
        self,
        stream: str,
        recorded: list[RecordedEvent],
        inserted: int,
        expected_version: int,
    ) -> list[RecordedEvent]:
        # Which key collided? If the first not-inserted event is already stored under its
        # own id, this is a retry of an append that happened: return what is stored.
        # Anything else means the (stream, seq) slot belongs to someone else.
        pending = recorded[inserted:]
        stored = {
            d["_id"]: d async for d in self.events.find({"_id": {"$in": [r.id for r in pending]}})
        }
        if stored and all(r.id in stored for r in pending):
            # A retried append: make sure it reaches the bus (twice is harmless).
            await self.outbox.ready([to_document(r) for r in recorded[:inserted]])
            await self.outbox.ready(list(stored.values()))
            self._appended.set()
            return recorded[:inserted] + [from_document(stored[r.id]) for r in pending]
        # A multi-event append that lost the race halfway keeps the prefix it wrote (its
        # own, contiguous): that part goes out; the rest never existed.
        await self.outbox.ready([to_document(r) for r in recorded[:inserted]])
        await self.outbox.unstage([r.id for r in pending])
        raise ConcurrencyError(stream, expected_version + inserted)

    # -- reading ----------------------------------------------------------------------

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        """All events of ``stream`` with ``seq`` > ``after_seq``, in order."""
        cursor = self.events.find({"stream": stream, "seq": {"$gt": after_seq}}).sort("seq", 1)
        return [from_document(d) async for d in cursor]

    async def stream_version(self, stream: str) -> int:
        """The ``seq`` of the last event of ``stream`` (0 if it has none)."""
        doc = await self.events.find_one({"stream": stream}, sort=[("seq", -1)])
        return int(doc["seq"]) if doc else 0

    async def read_all(
        self,
        *,
        after_position: int = 0,
        types: Sequence[str] | None = None,
        batch_size: int = 1000,
    ) -> AsyncIterator[RecordedEvent]:
        """Every event after ``after_position`` in position order (optionally of ``types``).

        Reads in pages so memory stays bounded over a large log.
        """
        last = after_position
        while True:
            query: Doc = {"position": {"$gt": last}}
            if types is not None:
                query["type"] = {"$in": list(types)}
            cursor = self.events.find(query).sort("position", 1).limit(batch_size)
            page = [from_document(d) async for d in cursor]
            for event in page:
                yield event
            if len(page) < batch_size:
                return
            last = page[-1].position

    async def find_by_correlation(self, correlation_id: str) -> list[RecordedEvent]:
        """Every event that belongs to one job or request, in position order."""
        cursor = self.events.find({"correlation_id": correlation_id}).sort("position", 1)
        return [from_document(d) async for d in cursor]

    # -- outbox -----------------------------------------------------------------------

    async def unpublished(
        self, *, producer: str | None = None, limit: int = 500
    ) -> list[RecordedEvent]:
        """The oldest events ready to publish (and not backing off), in position order."""
        return await self.outbox.next_batch(producer=producer, limit=limit)

    async def count_unpublished(self, *, producer: str | None = None) -> int:
        """How many appended events the broker has not confirmed yet."""
        return await self.outbox.count(producer=producer)

    async def mark_published(self, event_ids: Sequence[str]) -> None:
        """Record that these events were confirmed by the broker."""
        await self.outbox.published(event_ids)

    async def defer(self, event_ids: Sequence[str], *, delay_s: float) -> None:
        """Keep events unpublished but skip them for ``delay_s`` (e.g. unroutable)."""
        await self.outbox.defer(event_ids, delay_s=delay_s)

    async def resolve_stale(self, *, older_than_s: float = 30.0) -> int:
        """Publish late what a writer that died mid-append left behind (see Outbox)."""
        settled = await self.outbox.resolve_stale(older_than_s=older_than_s)
        if settled:
            self._appended.set()
        return settled

    async def wait_for_append(self, seconds: float) -> None:
        """Wait until this process appends something, or ``seconds`` pass."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._appended.wait(), seconds)
        self._appended.clear()
