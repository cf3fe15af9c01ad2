"""The append-only event log on MongoDB (PyMongo's async API).

Storage model
-------------
``events`` holds the log. A unique index on (``stream``, ``seq``) gives optimistic
concurrency: appending at a position someone else took raises
:class:`ConcurrencyError`; so does appending past the stream's end (an expected version
whose event is not there: a lookup), which would leave a gap in ``seq``. ``_id`` is the
event id, which makes an append idempotent: appending the very same event again is a
no-op.

An append is inserts only: position claims (:class:`~.positions.PositionAllocator`),
one outbox marker (:class:`~.outbox.Outbox`), the events. The appended events are then
handed in memory to whoever listens in this process (:meth:`EventLog.on_append`: the
outbox relay), which publishes them without reading the log.

Cost of reads
-------------
Every read here is an equality lookup (``_id``, ``stream``, ``type``,
``correlation_id``), indexed on MongoDB and, on FerretDB with PostgreSQL, through the
GIN companions ``deploy/local/postgres/ferretdb-indexes.sql`` adds: its cost follows
what it returns, not the size of the log. Range filters (``position > N``) and sorts are
evaluated by FerretDB itself over what the equality part returned, so they are never
used alone, and reading a stream on from a version looks its events up by ``seq``
equality (:meth:`EventLog.read_stream`).

A global ``position`` gives every event its place in append order (with gaps), so
replays fold in the order things happened. No multi-document transactions are used, so
this works on FerretDB and on MongoDB.
"""

from __future__ import annotations

import asyncio
import heapq
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError, DuplicateKeyError

from peertrain.common.errors import Conflict, ValidationFailed
from peertrain.common.events import NewEvent, RecordedEvent, from_document, to_document
from peertrain.common.metrics import APPEND_CONFLICTS, EVENTS_APPENDED
from peertrain.common.text import has_nul

from .outbox import Outbox
from .positions import PositionAllocator

__all__ = ["AppendListener", "ConcurrencyError", "EventLog", "refuse_unstorable"]

Doc = dict[str, Any]

POINT_READS = 64
"""How many events :meth:`EventLog.read_stream` looks up one by one when reading on from
a version, before it reads the rest of the stream in one query."""
POINT_BATCH = 8
"""The most of those lookups in flight at once."""

KNOWN_STREAMS = 10_000
"""How many streams' highest seq seen an :class:`EventLog` keeps (the least recently
used go first): an append after one of them skips the lookup of its expected version."""

AppendListener = Callable[[list[RecordedEvent]], None]
"""Called with the events of each successful append, right after it (no I/O)."""


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


def refuse_unstorable(stream: str, events: Sequence[NewEvent]) -> None:
    """Raise :class:`ValidationFailed` if ``stream`` or one of ``events`` holds a NUL.

    The last line against what the store cannot hold (PostgreSQL refuses a NUL): every
    log refuses it before anything is written, so nothing is half written.
    """
    refused = [e.type for e in events if has_nul(e.model_dump(mode="json"))]
    if refused or has_nul(stream):
        raise ValidationFailed(
            f"{', '.join(refused) or 'an event'} for {stream[:100]!r} holds a NUL "
            "character, which the event log cannot store"
        )


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
        self._listeners: list[AppendListener] = []
        self._known: OrderedDict[str, int] = OrderedDict()
        """Per stream, the highest seq this process saw in this log (appended or read)."""

    async def ensure_indexes(self) -> None:
        """Create the log's indexes (idempotent)."""
        await self.events.create_index(
            [("stream", ASCENDING), ("seq", ASCENDING)], unique=True, name="stream_seq"
        )
        await self.events.create_index([("position", ASCENDING)], name="position")
        await self.events.create_index([("correlation_id", ASCENDING)], name="correlation")
        await self.events.create_index([("type", ASCENDING)], name="type")
        await self.outbox.ensure_indexes()

    def on_append(self, listener: AppendListener) -> Callable[[], None]:
        """Call ``listener`` with every append of this process; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def observed(self, event: RecordedEvent) -> None:
        """``event`` reached this process from the bus: its position (another process's
        claim, if it is of this log) hints where the next append's claim starts."""
        self.positions.observe(event.position)

    def _appended(self, recorded: list[RecordedEvent]) -> None:
        if recorded:
            for listener in list(self._listeners):
                listener(recorded)

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
            If another writer took one of these positions first, or the stream is not
            at ``expected_version`` yet.
        ValidationFailed
            If ``stream`` or an event holds a NUL character (nothing is written).
        """
        if not events:
            return []
        if expected_version < 0:
            raise ValueError("expected_version must be >= 0")
        refuse_unstorable(stream, events)  # before a position is taken
        # The unique (stream, seq) index refuses a seq taken, not one past the end: an
        # expected version ahead of the stream would leave a gap. So the event at
        # ``expected_version`` must be there (events are never removed: once there, it
        # stays), which one equality lookup tells (none when this process appended or
        # read that seq, or a later one: :meth:`_has_seq`). It runs beside the position claim
        # and the outbox marker (which names the events' ids, known already): three
        # round trips at once, before the insert, instead of two one after the other.
        # All run to their end, so no failure is left unheard; a marker staged for an
        # append that does not happen is dropped again.
        first = events[0]
        claimed, there, marker = await asyncio.gather(
            self.positions.allocate(len(events)),
            self._has_seq(stream, expected_version),
            self.outbox.stage(first.id, first.producer, [e.id for e in events]),
            return_exceptions=True,
        )
        failed = next((r for r in (claimed, there) if isinstance(r, BaseException)), None)
        if failed is not None or not there:
            if not isinstance(marker, BaseException):
                await self.outbox.unstage(marker)
            if failed is not None:
                raise failed
            APPEND_CONFLICTS.labels(producer=first.producer).inc()
            raise ConcurrencyError(stream, expected_version)
        if isinstance(marker, BaseException):
            raise marker
        assert isinstance(claimed, list)
        positions = claimed
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
        try:
            if len(docs) == 1:
                await self.events.insert_one(docs[0])
            else:
                await self.events.insert_many(docs, ordered=True)
        except (DuplicateKeyError, BulkWriteError) as exc:
            inserted = exc.details.get("nInserted", 0) if isinstance(exc, BulkWriteError) else 0
            return await self._resolve_duplicate(
                stream, recorded, inserted, expected_version, marker
            )
        self._saw(stream, recorded[-1].seq)
        self._appended(recorded)
        EVENTS_APPENDED.labels(producer=recorded[0].producer).inc(len(recorded))
        return recorded

    async def _has_seq(self, stream: str, seq: int) -> bool:
        """Whether ``stream`` holds an event at ``seq`` (every stream holds seq 0).

        Without a lookup when this process saw that seq, or a later one, in this log:
        seqs are contiguous and events are never removed, so what was there once stays
        (one lookup an append before, for appends that nearly all follow the process's
        own). Not from events the bus brought: another log may share the broker, and its
        events could vouch for a seq this log lacks.
        """
        if seq <= self._known.get(stream, 0):
            return True
        found = await self.events.find_one({"stream": stream, "seq": seq}, {"_id": 1})
        if found is not None:
            self._saw(stream, seq)
        return found is not None

    def _saw(self, stream: str, seq: int) -> None:
        """``stream`` holds an event at ``seq`` in this log."""
        self._known[stream] = max(seq, self._known.get(stream, 0))
        self._known.move_to_end(stream)
        while len(self._known) > KNOWN_STREAMS:
            self._known.popitem(last=False)

    async def _resolve_duplicate(
        self,
        stream: str,
        recorded: list[RecordedEvent],
        inserted: int,
        expected_version: int,
        marker: str,
    ) -> list[RecordedEvent]:
        # Which key collided? If the first not-inserted event is already stored under its
        # own id, this is a retry of an append that happened: return what is stored.
        # Anything else means the (stream, seq) slot belongs to someone else.
        pending = recorded[inserted:]
        stored: dict[str, Doc] = {}
        for r in pending:  # equality lookups, not $in (which FerretDB answers by a scan)
            doc = await self.events.find_one({"_id": r.id})
            if doc is not None:
                stored[r.id] = doc
        if stored and all(r.id in stored for r in pending):
            # A retried append: make sure it reaches the bus (twice is harmless).
            again = recorded[:inserted] + [from_document(stored[r.id]) for r in pending]
            self._saw(stream, again[-1].seq)
            self._appended(again)
            return again
        # A multi-event append that lost the race halfway keeps the prefix it wrote (its
        # own, contiguous): that part goes out; the rest never existed. The marker stays
        # for the relay's sweep when a prefix was written (it settles the missing ids).
        if inserted:
            self._saw(stream, recorded[inserted - 1].seq)
            self._appended(recorded[:inserted])
        else:
            await self.outbox.unstage(marker)
        APPEND_CONFLICTS.labels(producer=recorded[0].producer).inc()
        raise ConcurrencyError(stream, expected_version + inserted)

    # -- reading ----------------------------------------------------------------------

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        """All events of ``stream`` with ``seq`` > ``after_seq``, in order.

        Read on from a version (``after_seq`` > 0: a cached state catching up), the
        events are looked up by ``(stream, seq)`` equality, a few at once, until one is
        missing: FerretDB pushes both equalities down to PostgreSQL, but not the range
        ``seq > n``, which fetched the whole stream from the backend for the few events
        that followed (a 30-round job's stream holds about a thousand). Seqs are
        contiguous, so the first missing one ends the stream. Past
        :data:`POINT_READS` events the rest comes in one query.
        """
        events: list[RecordedEvent] = []
        seq = after_seq + 1
        if after_seq > 0:
            batch = 1
            while len(events) < POINT_READS:
                docs = await asyncio.gather(
                    *(
                        self.events.find_one({"stream": stream, "seq": s})
                        for s in range(seq, seq + batch)
                    )
                )
                for doc in docs:
                    if doc is None:  # the end of the stream (later ones: appended meanwhile)
                        if events:
                            self._saw(stream, events[-1].seq)
                        return events
                    events.append(from_document(doc))
                seq += batch
                batch = min(batch * 2, POINT_BATCH)
        cursor = self.events.find({"stream": stream, "seq": {"$gte": seq}}).sort("seq", 1)
        events += [from_document(d) async for d in cursor]
        if events:
            self._saw(stream, events[-1].seq)
        return events

    async def stream_version(self, stream: str) -> int:
        """The ``seq`` of the last event of ``stream`` (0 if it has none)."""
        doc = await self.events.find_one({"stream": stream}, sort=[("seq", -1)])
        return int(doc["seq"]) if doc else 0

    async def read_all(
        self,
        *,
        after_position: int = 0,
        types: Sequence[str] | None = None,
    ) -> AsyncIterator[RecordedEvent]:
        """Every event after ``after_position`` in position order (optionally of ``types``).

        For start-up and replay. With ``types``, one indexed equality read per type,
        merged by position; without, one pass over the whole log.
        """
        if types is None:
            cursor = self.events.find({}).sort("position", 1)
            async for doc in cursor:
                if doc["position"] > after_position:
                    yield from_document(doc)
            return
        per_type: list[list[RecordedEvent]] = []
        for event_type in dict.fromkeys(types):
            found = [
                from_document(d)
                async for d in self.events.find({"type": event_type})
                if d["position"] > after_position
            ]
            found.sort(key=lambda e: e.position)
            per_type.append(found)
        for event in heapq.merge(*per_type, key=lambda e: e.position):
            yield event

    async def find_by_correlation(self, correlation_id: str) -> list[RecordedEvent]:
        """Every event that belongs to one job or request, in position order."""
        cursor = self.events.find({"correlation_id": correlation_id})
        found = [from_document(d) async for d in cursor]
        return sorted(found, key=lambda e: e.position)

    # -- outbox -----------------------------------------------------------------------

    async def count_unpublished(self, *, producer: str | None = None) -> int:
        """How many appended events the broker has not confirmed yet."""
        return await self.outbox.count(producer=producer)
