"""Pre-fill an event log with synthetic events, to measure the platform on a large log.

``await prefill(db, 1_000_000)`` makes sure the log in ``db`` holds at least that many
pre-filled events, inserting only what is missing: a marker document in
``<log>_prefill`` counts what earlier runs inserted (one ``find_one``), so a second run
on the same log skips at once.

The events are ``diagnostic.pinged`` (a catalogued type that no service folds or
replays): streams ``bench:prefill-<k>`` of 100 events (``seq`` 1..100, each caused by
the one before, one correlation id per stream). The first event of each batch is built
as a :class:`RecordedEvent` and stored with :func:`to_document`; the others are that
document with their own id, stream, ``seq``, position, time, cause and payload filled in
(a pydantic event per document cost the prefill a quarter of its CPU), so each document
has the shape, indexes and size of a real one (``libs/common/tests/test_prefill.py``
reads them back as events). They are never published: nothing stages them in the outbox.

Positions come from the log's own :class:`PositionAllocator`, one block per batch of
10,000: its ``allocate`` claims a block with one ``insert_many`` of claim documents per
segment, and steps over numbers a running service claims meanwhile, so the services
keep appending above (or between) the pre-filled events. The events of a batch go in
with one ``insert_many``; a few batches are in flight at once.

Run alone: ``python -m peertrain.common.testing.prefill --db pt_bench --count 1000000``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent, RecordedEvent, to_document
from peertrain.common.events.diagnostics import DiagnosticPinged
from peertrain.common.ids import new_id
from peertrain.common.settings import ServiceSettings

__all__ = ["PER_STREAM", "documents", "prefill", "prefilled", "stderr_progress"]

PER_STREAM = 100
BATCH = 10_000
IN_FLIGHT = 4
PRODUCER = "bench-prefill"
_MARKER = "prefill"
_DUPLICATE_KEY = 11000

Doc = dict[str, Any]


async def prefilled(db: AsyncDatabase[Doc], *, collection: str = "events") -> int:
    """How many pre-filled events the log holds (from the marker: one ``find_one``)."""
    marker = await db[f"{collection}_prefill"].find_one({"_id": _MARKER})
    return int(marker["events"]) if marker else 0


async def prefill(
    db: AsyncDatabase[Doc],
    count: int,
    *,
    collection: str = "events",
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Make the log hold at least ``count`` pre-filled events.

    Parameters
    ----------
    db
        The database of the log (the services' ``mongo_db``).
    count
        How many pre-filled events the log should hold in all.
    collection
        The log's collection.
    progress
        Told ``(inserted so far, to insert)`` after each group of batches.

    Returns
    -------
    int
        How many events this call inserted (0 when the log had enough already).
    """
    done = await prefilled(db, collection=collection)
    missing = max(0, count - done)
    if not missing:
        return 0
    log = EventLog(db, collection)
    await log.ensure_indexes()
    marker = db[f"{collection}_prefill"]
    inserted = 0
    while inserted < missing:
        group: list[tuple[int, int]] = []  # (first event, how many)
        while len(group) < IN_FLIGHT and inserted + sum(n for _, n in group) < missing:
            first = done + sum(n for _, n in group)
            group.append((first, min(BATCH, missing - inserted - (first - done))))
        # Claimed in order, so positions follow the events' numbering (and each
        # stream's seq); then the batches go in at once.
        blocks = [await log.positions.allocate(n) for _, n in group]
        await asyncio.gather(*(_insert(log, f, b) for (f, _), b in zip(group, blocks, strict=True)))
        added = sum(n for _, n in group)
        done += added
        inserted += added
        await marker.update_one({"_id": _MARKER}, {"$set": {"events": done}}, upsert=True)
        if progress is not None:
            progress(inserted, missing)
    return inserted


def stderr_progress() -> Callable[[int, int], None]:
    """A ``progress`` for :func:`prefill` that prints a line with the rate to stderr."""
    started = time.perf_counter()

    def report(done: int, total: int) -> None:
        rate = done / (time.perf_counter() - started)
        print(f"prefill: {done:,}/{total:,} events ({rate:,.0f}/s)", file=sys.stderr)

    return report


async def _insert(log: EventLog, first: int, positions: list[int]) -> None:
    """Pre-filled events from number ``first`` on (numbered across runs), at ``positions``."""
    docs = documents(first, positions)
    try:
        await log.events.insert_many(docs, ordered=False)
    except BulkWriteError as exc:  # a rerun after a crash: those (stream, seq) are in
        if any(e.get("code") != _DUPLICATE_KEY for e in exc.details.get("writeErrors", [])):
            raise


def documents(first: int, positions: list[int]) -> list[Doc]:
    """The stored documents of pre-filled events number ``first`` on, at ``positions``."""
    if not positions:
        return []
    template = to_document(_first_event(first, positions[0]))
    docs: list[Doc] = [template]
    correlation = template["correlation_id"]
    for i, position in enumerate(positions[1:], start=first + 1):
        stream, seq = divmod(i, PER_STREAM)
        if seq == 0:  # a new stream: a new correlation, no cause
            correlation = new_id()
        docs.append(
            template
            | {
                "_id": new_id(),
                "stream": f"bench:prefill-{stream}",
                "seq": seq + 1,
                "position": position,
                "occurred_at": datetime.now(UTC),
                "correlation_id": correlation,
                "causation_id": docs[-1]["_id"] if seq else None,
                "data": {"n": i, "note": f"prefill {stream}"},
            }
        )
    return docs


def _first_event(i: int, position: int) -> RecordedEvent:
    stream, seq = divmod(i, PER_STREAM)
    new = NewEvent.of(
        DiagnosticPinged(n=i, note=f"prefill {stream}"),
        producer=PRODUCER,
        actor=PRODUCER,
        correlation_id=new_id(),
    )
    return RecordedEvent(
        **new.model_dump(exclude={"data"}),
        data=new.data,
        stream=f"bench:prefill-{stream}",
        seq=seq + 1,
        position=position,
    )


async def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="the log's database (a service's mongo_db)")
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--collection", default="events")
    args = parser.parse_args()
    settings = ServiceSettings(service_name="bench")
    client: AsyncMongoClient[Doc] = AsyncMongoClient(settings.mongo_url, tz_aware=True)
    try:
        db = client[args.db]
        report = stderr_progress()
        inserted = await prefill(db, args.count, collection=args.collection, progress=report)
        total = await prefilled(db, collection=args.collection)
        print(f"prefill: inserted {inserted:,}; the log holds {total:,} pre-filled events")
    finally:
        await client.close()


if __name__ == "__main__":
    asyncio.run(_main())
