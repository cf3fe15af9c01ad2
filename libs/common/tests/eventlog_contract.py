"""What every event log answers, written once: :class:`EventLogContract`.

A backend's test module subclasses it (``class TestMemoryEventLog(EventLogContract)``)
and gives a ``log`` fixture: a fresh, empty log. It runs here on
:class:`MemoryEventLog` (``test_memory_eventlog.py``) and on the real log over FerretDB
(``tests/stack/test_eventlog.py``), so the in-memory log the simulation and unit tests
use is held to what the platform's does.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from prometheus_client import REGISTRY

from peertrain.common.errors import ValidationFailed
from peertrain.common.eventlog import ConcurrencyError, LogPort
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.diagnostics import DIAGNOSTIC_PINGED, DiagnosticPinged
from peertrain.common.events.users import UserDisabled

__all__ = ["EventLogContract", "Log", "ping"]

Log = LogPort


def ping(n: int, note: str = "", correlation_id: str = "c1") -> NewEvent:
    return NewEvent.of(
        DiagnosticPinged(n=n, note=note), producer="test", correlation_id=correlation_id
    )


def numbers(events: list[RecordedEvent]) -> list[int]:
    return [e.data.n for e in events]  # type: ignore[union-attr]


def places(events: list[RecordedEvent]) -> list[tuple[str, str, int, int]]:
    """Where each event is (the real log's read-backs keep milliseconds of the time)."""
    return [(e.id, e.stream, e.seq, e.position) for e in events]


class EventLogContract:
    """The event log's behaviour; subclasses provide the ``log`` fixture."""

    async def test_an_append_numbers_its_stream_from_the_expected_version(self, log: Log) -> None:
        first = await log.append("job:a", [ping(1), ping(2)], expected_version=0)
        other = await log.append("job:b", [ping(3)], expected_version=0)
        more = await log.append("job:a", [ping(4)], expected_version=2)
        assert [(e.stream, e.seq) for e in first + more] == [
            ("job:a", 1),
            ("job:a", 2),
            ("job:a", 3),
        ]
        assert (other[0].stream, other[0].seq) == ("job:b", 1)
        positions = [e.position for e in first + other + more]
        assert positions == sorted(set(positions)) and positions[0] > 0  # append order
        assert numbers(await log.read_stream("job:a")) == [1, 2, 4]
        assert await log.stream_version("job:a") == 3 and await log.stream_version("job:b") == 1

    async def test_an_append_keeps_the_envelope(self, log: Log) -> None:
        new = NewEvent.of(UserDisabled(user_id="u"), producer="auth", actor="admin")
        (recorded,) = await log.append("user:u", [new], expected_version=0)
        (read,) = await log.read_stream("user:u")
        assert places([read]) == places([recorded]) == [(new.id, "user:u", 1, read.position)]
        assert (read.type, read.producer, read.actor, read.data) == (
            "user.disabled",
            "auth",
            "admin",
            new.data,
        )
        assert abs(read.occurred_at - new.occurred_at) < timedelta(milliseconds=1)  # BSON: ms

    async def test_nothing_to_append_writes_nothing(self, log: Log) -> None:
        assert await log.append("job:a", [], expected_version=0) == []
        assert await log.append("job:a", [], expected_version=7) == []
        assert await log.stream_version("job:a") == 0

    async def test_a_negative_expected_version_is_refused(self, log: Log) -> None:
        with pytest.raises(ValueError):
            await log.append("job:a", [ping(1)], expected_version=-1)

    async def test_a_stale_expected_version_conflicts_and_writes_nothing(self, log: Log) -> None:
        await log.append("job:a", [ping(1), ping(2)], expected_version=0)
        with pytest.raises(ConcurrencyError) as info:
            await log.append("job:a", [ping(3), ping(4)], expected_version=1)
        assert info.value.stream == "job:a" and info.value.code == "concurrency_conflict"
        assert numbers(await log.read_stream("job:a")) == [1, 2]

    async def test_an_expected_version_ahead_of_the_stream_conflicts_and_leaves_no_gap(
        self, log: Log
    ) -> None:
        with pytest.raises(ConcurrencyError):
            await log.append("job:new", [ping(1)], expected_version=1)
        await log.append("job:a", [ping(1)], expected_version=0)
        with pytest.raises(ConcurrencyError) as info:
            await log.append("job:a", [ping(5), ping(6)], expected_version=4)
        assert info.value.expected_version == 4
        assert await log.read_stream("job:new") == []
        assert numbers(await log.read_stream("job:a")) == [1]
        assert await log.stream_version("job:a") == 1
        await log.append("job:a", [ping(2)], expected_version=1)  # the log goes on
        assert [e.seq for e in await log.read_stream("job:a")] == [1, 2]

    async def test_of_concurrent_appends_at_one_version_exactly_one_lands(self, log: Log) -> None:
        await log.append("job:a", [ping(0)], expected_version=0)

        async def attempt(i: int) -> str:
            try:
                await log.append("job:a", [ping(i)], expected_version=1)
            except ConcurrencyError:
                return "conflict"
            return "ok"

        conflicts = _conflicts(ping(0).producer)
        outcomes = await asyncio.gather(*(attempt(i) for i in range(1, 21)))
        assert outcomes.count("ok") == 1 and outcomes.count("conflict") == 19
        assert _conflicts(ping(0).producer) - conflicts == 19  # the contention is counted
        assert [e.seq for e in await log.read_stream("job:a")] == [1, 2]

    async def test_a_retried_append_answers_the_stored_events_and_hands_them_on_again(
        self, log: Log
    ) -> None:
        handed: list[list[RecordedEvent]] = []
        log.on_append(handed.append)
        events = [ping(1), ping(2)]
        first = await log.append("job:a", events, expected_version=0)
        await log.append("job:a", [ping(3)], expected_version=2)
        again = await log.append("job:a", events, expected_version=0)
        assert places(again) == places(first)  # seqs and positions as first stored
        assert numbers(await log.read_stream("job:a")) == [1, 2, 3]
        # a retry may follow an answer lost on the way: the events go out again
        assert [places(h) for h in handed] == [places(first), places(handed[1]), places(first)]

    async def test_an_append_of_stored_and_new_events_conflicts(self, log: Log) -> None:
        stored = ping(1)
        await log.append("job:a", [stored], expected_version=0)
        with pytest.raises(ConcurrencyError):
            await log.append("job:a", [stored, ping(2)], expected_version=0)
        assert numbers(await log.read_stream("job:a")) == [1]

    async def test_a_nul_is_refused_before_anything_is_written(self, log: Log) -> None:
        handed: list[list[RecordedEvent]] = []
        log.on_append(handed.append)
        await log.append("job:nul", [ping(1)], expected_version=0)
        with pytest.raises(ValidationFailed, match="NUL") as info:
            await log.append("job:nul", [ping(2), ping(3, "x\x00y")], expected_version=1)
        assert "x\x00y" not in str(info.value)
        with pytest.raises(ValidationFailed, match="NUL"):
            await log.append("job:\x00", [ping(2)], expected_version=0)
        assert numbers(await log.read_stream("job:nul")) == [1] and len(handed) == 1
        await log.append("job:nul", [ping(2)], expected_version=1)  # the log goes on
        assert await log.stream_version("job:nul") == 2

    async def test_listeners_get_each_append_until_they_unsubscribe(self, log: Log) -> None:
        handed: list[list[str]] = []
        unsubscribe = log.on_append(lambda events: handed.append([e.id for e in events]))
        first = await log.append("job:a", [ping(1), ping(2)], expected_version=0)
        with pytest.raises(ConcurrencyError):
            await log.append("job:a", [ping(3)], expected_version=0)
        unsubscribe()
        unsubscribe()  # twice is harmless
        await log.append("job:a", [ping(4)], expected_version=2)
        assert handed == [[e.id for e in first]]

    async def test_read_stream_on_from_a_version(self, log: Log) -> None:
        await log.append("job:a", [ping(n) for n in range(1, 6)], expected_version=0)
        for after in range(7):
            tail = await log.read_stream("job:a", after_seq=after)
            assert [e.seq for e in tail] == list(range(after + 1, 6)), after
        assert await log.read_stream("job:none") == []
        assert await log.read_stream("job:none", after_seq=3) == []
        assert await log.stream_version("job:none") == 0

    async def test_read_all_in_position_order_after_a_position_and_of_types(self, log: Log) -> None:
        a = await log.append("job:a", [ping(1), ping(2), ping(3)], expected_version=0)
        u = await log.append(
            "user:u", [NewEvent.of(UserDisabled(user_id="u"), producer="t")], expected_version=0
        )
        b = await log.append("job:a", [ping(4)], expected_version=3)
        everything = [e async for e in log.read_all()]
        assert [e.id for e in everything] == [e.id for e in a + u + b]
        after = [e async for e in log.read_all(after_position=a[1].position)]
        assert [e.id for e in after] == [e.id for e in [a[2], *u, *b]]
        pings = [e async for e in log.read_all(types=[DIAGNOSTIC_PINGED])]
        assert numbers(pings) == [1, 2, 3, 4]
        both = [e async for e in log.read_all(types=["user.disabled", DIAGNOSTIC_PINGED])]
        assert [e.id for e in both] == [e.id for e in everything]  # merged by position
        later = [
            e async for e in log.read_all(after_position=u[0].position, types=["user.disabled"])
        ]
        assert later == []
        assert [e async for e in log.read_all(types=["nobody.heard_of"])] == []

    async def test_find_by_correlation_in_position_order(self, log: Log) -> None:
        await log.append("job:a", [ping(1, correlation_id="j1")], expected_version=0)
        await log.append("job:b", [ping(2, correlation_id="j2")], expected_version=0)
        await log.append("job:a", [ping(3, correlation_id="j1")], expected_version=1)
        assert numbers(await log.find_by_correlation("j1")) == [1, 3]
        assert await log.find_by_correlation("nobody") == []

    async def test_indexes_and_observed_events_change_nothing_that_is_read(self, log: Log) -> None:
        await log.ensure_indexes()
        (event,) = await log.append("job:a", [ping(1)], expected_version=0)
        await log.ensure_indexes()  # idempotent
        log.observed(event.model_copy(update={"position": event.position + 1000}))
        (later,) = await log.append("job:a", [ping(2)], expected_version=1)
        assert later.position > event.position
        assert numbers(await log.read_stream("job:a")) == [1, 2]


def _conflicts(producer: str) -> float:
    sample = REGISTRY.get_sample_value("peertrain_append_conflicts_total", {"producer": producer})
    return sample or 0.0
