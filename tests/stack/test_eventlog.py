"""The event log against the real MongoDB-wire server (FerretDB locally)."""

from __future__ import annotations

import asyncio

import pytest

from peertrain.common.eventlog import ConcurrencyError, EventLog
from peertrain.common.events import NewEvent
from peertrain.common.events.diagnostics import DiagnosticPinged


def ping(n: int, note: str = "") -> NewEvent:
    return NewEvent.of(DiagnosticPinged(n=n, note=note), producer="test", correlation_id="c1")


async def test_fifty_concurrent_appends_at_one_position(event_log: EventLog) -> None:
    await event_log.append("job:a", [ping(0)], expected_version=0)

    async def attempt(i: int) -> str:
        try:
            await event_log.append("job:a", [ping(i)], expected_version=1)
        except ConcurrencyError:
            return "conflict"
        return "ok"

    outcomes = await asyncio.gather(*(attempt(i) for i in range(50)))
    assert outcomes.count("ok") == 1
    assert outcomes.count("conflict") == 49
    stream = await event_log.read_stream("job:a")
    assert [e.seq for e in stream] == [1, 2]
    assert await event_log.stream_version("job:a") == 2


async def test_append_is_idempotent_by_event_id(event_log: EventLog) -> None:
    event = ping(1)
    first = await event_log.append("job:b", [event], expected_version=0)
    again = await event_log.append("job:b", [event], expected_version=0)
    assert again[0].id == first[0].id and again[0].seq == 1
    assert len(await event_log.read_stream("job:b")) == 1


async def test_a_different_event_at_a_taken_position_conflicts(event_log: EventLog) -> None:
    await event_log.append("job:c", [ping(1)], expected_version=0)
    with pytest.raises(ConcurrencyError) as info:
        await event_log.append("job:c", [ping(2), ping(3)], expected_version=0)
    assert info.value.stream == "job:c"
    assert [e.data.n for e in await event_log.read_stream("job:c")] == [1]  # type: ignore[union-attr]


async def test_read_stream_and_read_all_from_a_position(event_log: EventLog) -> None:
    a = await event_log.append("job:d", [ping(1), ping(2), ping(3)], expected_version=0)
    await event_log.append("job:e", [ping(4)], expected_version=0)
    assert [e.seq for e in await event_log.read_stream("job:d", after_seq=1)] == [2, 3]
    after = [e async for e in event_log.read_all(after_position=a[1].position, batch_size=2)]
    assert [e.data.n for e in after] == [3, 4]  # type: ignore[union-attr]
    typed = [e async for e in event_log.read_all(types=["diagnostic.pinged"])]
    assert len(typed) == 4
    assert all(e.correlation_id == "c1" for e in typed)
    assert [e.seq for e in await event_log.find_by_correlation("c1")][:3] == [1, 2, 3]


async def test_new_events_are_in_the_outbox_until_marked(event_log: EventLog) -> None:
    recorded = await event_log.append("job:f", [ping(1), ping(2)], expected_version=0)
    pending = await event_log.unpublished(producer="test")
    assert [e.id for e in pending] == [e.id for e in recorded]
    await event_log.mark_published([recorded[0].id])
    assert [e.id for e in await event_log.unpublished()] == [recorded[1].id]
    await event_log.defer([recorded[1].id], delay_s=60)
    assert await event_log.unpublished() == []
    assert await event_log.count_unpublished() == 1
