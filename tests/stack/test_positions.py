"""Global log positions on the real MongoDB-wire server: claims from several processes
(one allocator each) stay unique and dense, an allocator that fell behind catches up by
lookups, not by failing one insert per number it is behind, and one that heard of the
others' events on the bus claims above them at once."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

from prometheus_client import REGISTRY

from peertrain.common.bus import OutboxRelay
from peertrain.common.eventlog import EventLog
from peertrain.common.eventlog.positions import SEGMENT, PositionAllocator
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.diagnostics import DiagnosticPinged


class Counting(PositionAllocator):
    """Counts its lookups and its claim attempts."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.lookups = 0
        self.claims = 0

    async def claimed(self, number: int) -> bool:
        self.lookups += 1
        return await super().claimed(number)

    async def claim(self, numbers: list[int]) -> int:
        self.claims += 1
        return await super().claim(numbers)


def allocators(log: EventLog, n: int) -> list[Counting]:
    return [Counting(log.db, log.events.name) for _ in range(n)]


async def test_concurrent_allocators_hand_out_every_number_once(event_log: EventLog) -> None:
    processes = allocators(event_log, 5)

    async def run(allocator: Counting, blocks: list[int]) -> list[int]:
        got: list[int] = []
        for size in blocks:
            got += await allocator.allocate(size)
        return got

    handed = await asyncio.gather(*(run(a, [1, 3, 7, 2, 5] * 4) for a in processes))
    for got in handed:
        assert got == sorted(got)  # each process's positions only grow
    every = sorted(p for got in handed for p in got)
    assert every == list(range(1, len(every) + 1))  # unique and dense


async def test_an_allocator_far_behind_catches_up_by_lookups(event_log: EventLog) -> None:
    stale, busy = allocators(event_log, 2)
    assert await stale.allocate(1) == [1]
    gap = 1_500
    await busy.allocate(gap)
    stale.claims = 0
    lost = _claims_lost()
    assert await stale.allocate(2) == [gap + 2, gap + 3]
    assert stale.lookups <= 2 * math.ceil(math.log2(gap)) + 2
    assert stale.claims == 2  # the attempt that lost, then the one that held
    assert _claims_lost() - lost == 1  # counted (the contention operators see)


def _claims_lost() -> float:
    return REGISTRY.get_sample_value("peertrain_position_claims_lost_total") or 0.0


async def test_start_up_finds_the_highest_claim_across_segments(event_log: EventLog) -> None:
    first = allocators(event_log, 1)[0]
    await first.allocate(SEGMENT + 25)  # into the second segment
    late = allocators(event_log, 1)[0]
    assert await late.highest_claimed() == SEGMENT + 25
    assert late.lookups <= 2 * math.ceil(math.log2(SEGMENT)) + 2
    assert await late.allocate(1) == [SEGMENT + 26]


async def test_a_position_heard_of_moves_the_next_claim_past_it(event_log: EventLog) -> None:
    behind, busy = allocators(event_log, 2)
    assert await behind.allocate(1) == [1]
    taken = await busy.allocate(20)  # another process's appends
    behind.observe(taken[-1])  # ... one of whose events reached this process
    behind.lookups = behind.claims = 0
    assert await behind.allocate(2) == [22, 23]
    assert (behind.lookups, behind.claims) == (1, 1)  # the hint checked, one claim held


async def test_a_position_not_claimed_in_this_log_is_no_hint(event_log: EventLog) -> None:
    allocator = allocators(event_log, 1)[0]
    assert await allocator.allocate(2) == [1, 2]
    allocator.observe(1_000_000)  # an event of another log on the same broker
    assert await allocator.allocate(1) == [3]  # nothing free is jumped over
    allocator.lookups = 0
    assert await allocator.allocate(1) == [4]
    assert allocator.lookups == 0  # checked once, then forgotten


async def test_a_service_answering_events_from_the_bus_claims_without_losing(
    event_log: EventLog,
    broker: Any,
    consume: Any,
    unique: Callable[[str], str],
    eventually: Any,
) -> None:
    """Two processes on one log: one appends and relays, the other consumes (observing,
    as every service's subscriptions do) and answers each event with an append of its
    own. Its claims start above what it heard of, so none is lost to the first."""
    note = unique("n")
    answering = EventLog(event_log.db, event_log.events.name)
    answering.positions = counting = Counting(event_log.db, event_log.events.name)
    await answering.append(
        f"answers:{note}", [_ping(0, note, producer="answerer")], expected_version=0
    )
    answers: list[RecordedEvent] = []

    async def answer(event: RecordedEvent) -> None:
        if event.stream == f"asks:{note}":
            answers.extend(
                await answering.append(
                    f"answers:{note}",
                    [_ping(event.seq, note, producer="answerer")],
                    expected_version=len(answers) + 1,
                )
            )

    await consume(unique("test.positions"), answer, observe=answering.observed)
    relay = OutboxRelay(event_log, broker, producer="test")
    relay.start()
    try:
        for k in range(20):  # each appends after the other's last: a ping-pong
            await event_log.append(f"asks:{note}", [_ping(k, note)], expected_version=k)
            await eventually(lambda k=k: len(answers) == k + 1, what=f"the answer to {k}")
    finally:
        await relay.stop()
    positions = [e.position for e in answers]
    assert positions == sorted(positions)
    assert counting.claims == 1 + 20  # not one claim lost to the other process


def _ping(n: int, note: str, *, producer: str = "test") -> NewEvent:
    return NewEvent.of(DiagnosticPinged(n=n, note=note), producer=producer)
