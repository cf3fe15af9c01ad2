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
has the shape, indexes and size of a real one (``libs/testkit/tests/test_prefill.py``
reads them back as events). They are never published: nothing stages them in the outbox.

Positions come from the log's own :class:`PositionAllocator`, one block per batch of
10,000: its ``allocate`` claims a block with one ``insert_many`` of claim documents per
segment, and steps over numbers a running service claims meanwhile, so the services
keep appending above (or between) the pre-filled events. The events of a batch go in
with one ``insert_many``; a few batches are in flight at once (over the wire; copied in
PostgreSQL, one at a time: see below).

On the local stack (FerretDB on PostgreSQL) ``sql=FerretPostgres.local()`` writes each
batch in PostgreSQL itself: the batch's first document goes in through FerretDB as
above, and one ``INSERT ... SELECT`` (through ``psql``) copies FerretDB's stored form of
it for the rest of the batch, each copy with its own id (time-ordered, as
:func:`~peertrain.common.ids.new_id`), stream, ``seq``, position, cause, correlation and
payload. PostgreSQL keeps the log's indexes as it does for FerretDB's own inserts;
FerretDB's conversion and pymongo's encoding are skipped. The copied batches go in one
at a time: four at once did the same work in the same time with 40% more CPU (on two
cores, concurrent inserts into the same tables only contend). Measured on the local
stack (2 cores, CPU-seconds of the whole machine):
200,000 events 69 CPU-s and 49 s over the wire, 29.5 CPU-s and 23 s copied four at a
time; a million copied four at a time 233-250 CPU-s and 146-165 s, one at a time 165
CPU-s and 146 s. (Without seven of the log's nine indexes during the copy, 200,000 took
32 instead of 39 CPU-s, and building them afterwards 5.5: not worth it.) The copies read
back through FerretDB as the wire path's documents do (``test_very_large_log.py``).

Run alone: ``python -m peertrain.testkit.common.prefill --db pt_bench --count 1000000
[--sql]``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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

from .lane import stack_port

__all__ = [
    "PER_STREAM",
    "FerretPostgres",
    "documents",
    "prefill",
    "prefilled",
    "stderr_progress",
]

PER_STREAM = 100
BATCH = 10_000
IN_FLIGHT = 4
"""Batches in flight at once over the wire (copied in PostgreSQL: one)."""
PRODUCER = "bench-prefill"
_MARKER = "prefill"
_DUPLICATE_KEY = 11000
_INT32 = 2**31

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
    sql: FerretPostgres | None = None,
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
    sql
        Write each batch's copies in PostgreSQL (FerretDB's backend) instead of over
        the wire; ``None``: everything through the MongoDB wire (any server).

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
    in_flight = IN_FLIGHT if sql is None else 1
    while inserted < missing:
        group: list[tuple[int, int]] = []  # (first event, how many)
        while len(group) < in_flight and inserted + sum(n for _, n in group) < missing:
            first = done + sum(n for _, n in group)
            group.append((first, min(BATCH, missing - inserted - (first - done))))
        # Claimed in order, so positions follow the events' numbering (and each
        # stream's seq); then the batches go in at once.
        blocks = [await log.positions.allocate(n) for _, n in group]
        insert = _insert if sql is None else sql.insert
        await asyncio.gather(*(insert(log, f, b) for (f, _), b in zip(group, blocks, strict=True)))
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


async def _insert(log: EventLog, first: int, positions: list[int]) -> bool:
    """Pre-filled events from number ``first`` on (numbered across runs), at ``positions``;
    whether all of them were new."""
    docs = documents(first, positions)
    try:
        await log.events.insert_many(docs, ordered=False)
    except BulkWriteError as exc:  # a rerun after a crash: those (stream, seq) are in
        if any(e.get("code") != _DUPLICATE_KEY for e in exc.details.get("writeErrors", [])):
            raise
        return False
    return True


@dataclass(frozen=True)
class FerretPostgres:
    """Batches written in FerretDB's PostgreSQL database, through ``psql``.

    FerretDB 1.x keeps a collection as a table of one ``_jsonb`` column in the schema
    named after the database; ``<schema>._ferretdb_database_metadata`` names the table.
    A stored document is its fields plus ``$s``, their types (``{"t": "string"}``, ...).
    """

    psql: Sequence[str]
    """``psql`` and its connection options, up to and including ``-d <database>``."""

    @classmethod
    def local(cls) -> FerretPostgres | None:
        """The local stack's (``deploy/local/postgres.sh``), or ``None`` without psql."""
        psql = shutil.which("psql", path="/usr/lib/postgresql/15/bin") or shutil.which("psql")
        if psql is None:
            return None
        port = str(stack_port(54320))
        return cls(
            (psql, "-X", "-q", "-h", "127.0.0.1", "-p", port, "-U", "postgres", "-d", "ferretdb")
        )

    async def run(self, script: str, **variables: object) -> str:
        """Run ``script`` (stops at the first error) with psql ``variables`` (``:'x'``
        quotes one as a literal, ``:"x"`` as a name); what it printed."""
        options = [f"--set={k}={v}" for k, v in variables.items()]
        proc = await asyncio.create_subprocess_exec(
            *self.psql,
            "--set=ON_ERROR_STOP=1",
            "-At",
            *options,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate(script.encode())
        if proc.returncode != 0:
            raise RuntimeError(f"psql failed ({proc.returncode}): {err.decode()[-500:]}")
        return out.decode()

    async def insert(self, log: EventLog, first: int, positions: list[int]) -> bool:
        """Pre-filled events from number ``first`` on, at ``positions``: the first
        through FerretDB, the others copied from it in PostgreSQL; whether the batch
        was new (as :func:`_insert`)."""
        if len(positions) < 2 or max(max(positions), first + len(positions)) >= _INT32:
            # one document, or numbers FerretDB would type "long" (the copies keep "int")
            return await _insert(log, first, positions)
        rerun = not await _insert(log, first, positions[:1])
        copied = await self.run(
            _COPY_SQL,
            schema=log.events.database.name,
            collection=log.events.name,
            first=first,
            per_stream=PER_STREAM,
            stream=f"bench:prefill-{first // PER_STREAM}",
            seq=first % PER_STREAM + 1,
            positions="{" + ",".join(str(int(p)) for p in positions[1:]) + "}",
        )
        # ON CONFLICT: a rerun after a crash finds some of its batch in the log already
        if not rerun and int(copied) != len(positions) - 1:
            raise RuntimeError(f"copied {copied.strip()} of {len(positions) - 1} events")
        return not rerun


# Row k (from 1) is event first + k. Within the batch and a stream, each event is caused
# by the one before (row 1: by the batch's first event, the document FerretDB stored,
# unless a stream starts there); every stream the batch starts gets a correlation of its
# own, as documents() does. "$s" types causation_id "null" on a stream's first event.
# The collection's table comes first (\gset: no row, and psql stops with an error).
_COPY_SQL = """
SELECT _jsonb->>'table' AS target FROM :"schema"._ferretdb_database_metadata
WHERE _jsonb->>'_id' = :'collection'
\\gset
WITH t AS (
  SELECT _jsonb AS j FROM :"schema".:"target"
  WHERE _jsonb->'stream' = to_jsonb(:'stream'::text) AND _jsonb->'seq' = to_jsonb(:seq)
),
r0 AS (
  SELECT k, p, :first + k AS i, gen_random_uuid()::text AS g,
    lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') AS h
  FROM unnest(:'positions'::bigint[]) WITH ORDINALITY AS u(p, k)
),
r AS (  -- a time-ordered id, as new_id()'s UUIDv7: milliseconds first, then random
  SELECT k, p, i,
    substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(g, 16, 3) || '-'
      || substr(g, 20, 17) AS id
  FROM r0
),
d AS (
  SELECT r.*, r.i / :per_stream AS s, r.i % :per_stream AS q,
    CASE WHEN r.k = 1 THEN (SELECT j->>'_id' FROM t)
         ELSE lag(r.id) OVER (ORDER BY r.k) END AS before
  FROM r
),
ins AS (
  INSERT INTO :"schema".:"target" (_jsonb)
  SELECT jsonb_set(t.j, '{$s,p,causation_id,t}',
                   CASE WHEN d.q = 0 THEN '"null"' ELSE '"string"' END::jsonb)
    || jsonb_build_object(
      '_id', d.id,
      'stream', 'bench:prefill-' || d.s,
      'seq', d.q + 1,
      'position', d.p,
      'correlation_id',
        CASE WHEN d.s = :first / :per_stream THEN t.j->'correlation_id'
             ELSE to_jsonb(md5('prefill ' || :first || ' ' || d.s)::uuid::text) END,
      'causation_id', CASE WHEN d.q = 0 THEN 'null'::jsonb ELSE to_jsonb(d.before) END,
      'data', jsonb_build_object('n', d.i, 'note', 'prefill ' || d.s))
  FROM d, t
  ON CONFLICT DO NOTHING
  RETURNING 1
)
SELECT count(*) FROM ins
"""


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
    parser.add_argument(
        "--sql", action="store_true", help="copy in PostgreSQL (FerretDB on the local stack)"
    )
    args = parser.parse_args()
    settings = ServiceSettings(service_name="bench")
    client: AsyncMongoClient[Doc] = AsyncMongoClient(settings.mongo_url, tz_aware=True)
    try:
        db = client[args.db]
        report = stderr_progress()
        sql = FerretPostgres.local() if args.sql else None
        inserted = await prefill(
            db, args.count, collection=args.collection, progress=report, sql=sql
        )
        total = await prefilled(db, collection=args.collection)
        print(f"prefill: inserted {inserted:,}; the log holds {total:,} pre-filled events")
    finally:
        await client.close()


if __name__ == "__main__":
    asyncio.run(_main())
