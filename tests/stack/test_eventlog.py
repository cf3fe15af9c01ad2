"""The event log against the real MongoDB-wire server (FerretDB locally): the contract
every event log keeps (``libs/common/tests/eventlog_contract.py``, which the in-memory log
keeps too), then what only this one does (positions claimed, reads by seq, the outbox)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from peertrain.common.errors import ValidationFailed
from peertrain.common.eventlog import ConcurrencyError, EventLog
from peertrain.common.eventlog.log import POINT_READS
from peertrain.common.events import NewEvent
from peertrain.common.events.diagnostics import DiagnosticPinged

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "libs" / "common" / "tests"))

from eventlog_contract import EventLogContract


class TestEventLogContract(EventLogContract):
    @pytest.fixture
    def log(self, event_log: EventLog) -> EventLog:
        return event_log


def ping(n: int, note: str = "") -> NewEvent:
    return NewEvent.of(DiagnosticPinged(n=n, note=note), producer="test", correlation_id="c1")


async def test_an_event_holding_a_nul_takes_no_position(event_log: EventLog) -> None:
    await event_log.append("job:nul", [ping(1)], expected_version=0)
    last = await event_log.positions.highest_claimed()
    with pytest.raises(ValidationFailed, match="NUL"):
        await event_log.append("job:nul", [ping(2), ping(3, "x\x00y")], expected_version=1)
    assert await event_log.positions.highest_claimed() == last


async def test_reading_on_from_any_version_gives_exactly_the_tail(event_log: EventLog) -> None:
    # Reading on looks events up one by one (POINT_READS of them), then reads the rest
    # in one query: every version, on either side of that switch, gives the same tail.
    total = (POINT_READS // 10 + 4) * 10  # whole appends of 10
    for k in range(0, total, 10):
        await event_log.append("job:f", [ping(k + j) for j in range(10)], expected_version=k)
    for after in (0, 1, 7, total - POINT_READS - 1, total - POINT_READS, 39, total - 1, total):
        tail = await event_log.read_stream("job:f", after_seq=after)
        assert [e.seq for e in tail] == list(range(after + 1, total + 1)), after
        assert [e.data.n for e in tail] == list(range(after, total))  # type: ignore[union-attr]
    assert await event_log.read_stream("job:f", after_seq=total + 5) == []
    assert await event_log.read_stream("job:nothing", after_seq=3) == []


async def test_new_events_are_in_the_outbox_until_confirmed(event_log: EventLog) -> None:
    handed: list[str] = []
    unsubscribe = event_log.on_append(lambda events: handed.extend(e.id for e in events))
    recorded = await event_log.append("job:f", [ping(1), ping(2)], expected_version=0)
    unsubscribe()
    # handed to this process's listeners (the relay) in memory, in order
    assert handed == [e.id for e in recorded]
    assert await event_log.count_unpublished(producer="test") == 2
    await event_log.outbox.confirmed([recorded[0].id])
    assert await event_log.count_unpublished() == 1
    # the sweep settles a marker once all its events are confirmed
    found = await event_log.outbox.sweep(producer="test", older_than_s=0)
    assert [e.id for e in found.republish] == [recorded[1].id] and found.settled == 0
    await event_log.outbox.confirmed([recorded[1].id])
    found = await event_log.outbox.sweep(producer="test", older_than_s=0)
    assert found.republish == [] and found.settled == 1
    assert await event_log.count_unpublished() == 0


async def test_a_marker_whose_append_never_happened_is_settled_after_the_grace(
    event_log: EventLog,
) -> None:
    ghost = ping(9)
    await event_log.outbox.stage(ghost.id, ghost.producer, [ghost.id])
    young = await event_log.outbox.sweep(producer="test", older_than_s=0, absent_after_s=60)
    assert young.republish == [] and young.settled == 0
    old = await event_log.outbox.sweep(producer="test", older_than_s=0, absent_after_s=0)
    assert old.republish == [] and old.settled == 1
    assert await event_log.count_unpublished() == 0


def _index_conditions(plan: dict[str, Any]) -> list[str]:
    """Every ``Index Cond`` of a PostgreSQL plan tree (FerretDB's ``explain``)."""
    found = [plan["Index Cond"]] if "Index Cond" in plan else []
    for child in plan.get("Plans", []):
        found += _index_conditions(child)
    return found


async def test_every_lookup_of_the_log_is_answered_by_an_index_on_all_its_fields(
    event_log: EventLog,
) -> None:
    # On FerretDB every equality lookup is `_jsonb->field @> value`, which only a GIN
    # companion answers (deploy/local/postgres/ferretdb-indexes.sql). One on the stream
    # alone made the append's expected-version lookup {stream, seq} read every event of
    # the stream: its cost grew with the job. Each lookup's fields must all be in the
    # index condition, so no lookup reads more rows than it returns.
    recorded = []
    for k in range(0, 40, 10):
        recorded += await event_log.append(
            "job:g", [ping(k + j) for j in range(10)], expected_version=k
        )
    db = event_log.events.database
    lookups = [
        {"stream": "job:g", "seq": 17},
        {"stream": "job:g"},
        {"_id": recorded[3].id},
        {"type": recorded[0].type},
        {"correlation_id": "c1"},
    ]
    for lookup in lookups:
        explained = await db.command("explain", {"find": event_log.events.name, "filter": lookup})
        if "ferretdbVersion" not in explained.get("serverInfo", {}):
            pytest.skip("MongoDB plans its own indexes")
        conditions = " ".join(_index_conditions(explained["queryPlanner"]["Plan"]))
        assert all(f"'{field}'" in conditions for field in lookup), (lookup, explained)


async def test_an_append_after_what_this_process_saw_skips_the_lookup_and_another_does_not(
    event_log: EventLog,
) -> None:
    """The expected version's lookup is skipped where this process appended or read that
    seq (events are never removed); another process on the same log still looks it up,
    so an expected version past the stream's end conflicts there as here."""
    lookups: list[dict[str, Any]] = []
    find_one = event_log.events.find_one

    async def counted(query: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if set(query) == {"stream", "seq"} and args == ({"_id": 1},):  # not a read
            lookups.append(query)
        return await find_one(query, *args, **kwargs)

    event_log.events.find_one = counted  # type: ignore[method-assign]
    await event_log.append("job:k", [ping(1), ping(2)], expected_version=0)
    await event_log.append("job:k", [ping(3)], expected_version=2)  # its own: known
    await event_log.append("job:k", [ping(4)], expected_version=3)
    assert lookups == []
    with pytest.raises(ConcurrencyError):  # past the end: looked up, refused
        await event_log.append("job:k", [ping(9)], expected_version=7)
    assert lookups == [{"stream": "job:k", "seq": 7}]

    other = EventLog(event_log.db, collection=event_log.events.name)  # another process
    with pytest.raises(ConcurrencyError):
        await other.append("job:k", [ping(9)], expected_version=7)
    await other.append("job:k", [ping(5)], expected_version=4)  # looked up: there
    assert [e.seq for e in await other.read_stream("job:k")] == [1, 2, 3, 4, 5]
    await other.append("job:k", [ping(6)], expected_version=5)  # read: known
    assert [e.seq for e in await event_log.read_stream("job:k", after_seq=4)] == [5, 6]
    await event_log.append("job:k", [ping(7)], expected_version=6)  # read on: known
    assert lookups == [{"stream": "job:k", "seq": 7}]
