"""Global log positions on the real MongoDB-wire server: claims from several processes
(one allocator each) stay unique and dense, and an allocator that fell behind catches
up by lookups, not by failing one insert per number it is behind."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from peertrain.common.eventlog import EventLog
from peertrain.common.eventlog.positions import SEGMENT, PositionAllocator


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
    assert await stale.allocate(2) == [gap + 2, gap + 3]
    assert stale.lookups <= 2 * math.ceil(math.log2(gap)) + 2
    assert stale.claims == 2  # the attempt that lost, then the one that held


async def test_start_up_finds_the_highest_claim_across_segments(event_log: EventLog) -> None:
    first = allocators(event_log, 1)[0]
    await first.allocate(SEGMENT + 25)  # into the second segment
    late = allocators(event_log, 1)[0]
    assert await late.highest_claimed() == SEGMENT + 25
    assert late.lookups <= 2 * math.ceil(math.log2(SEGMENT)) + 2
    assert await late.allocate(1) == [SEGMENT + 26]
