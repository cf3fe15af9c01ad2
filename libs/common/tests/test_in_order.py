"""A subscription's deliveries are handled one at a time, in delivery-tag order."""

from __future__ import annotations

import asyncio
import random

import pytest

from peertrain.common.bus import ordering
from peertrain.common.bus.ordering import InOrder


async def _deliver(order: InOrder, channel: object, tag: int, log: list[str]) -> None:
    async with order.turn(channel, tag):
        log.append(f"start {tag}")
        await asyncio.sleep(0)  # a handler awaits I/O: nobody else may start meanwhile
        log.append(f"end {tag}")


async def test_deliveries_arriving_shuffled_are_handled_in_tag_order_one_at_a_time() -> None:
    order = InOrder()
    channel = object()
    tags = list(range(1, 65))
    random.Random(7).shuffle(tags)
    log: list[str] = []
    await asyncio.gather(*(_deliver(order, channel, tag, log) for tag in tags))
    assert log == [f"{what} {tag}" for tag in range(1, 65) for what in ("start", "end")]


async def test_channels_are_independent_lines() -> None:
    order = InOrder()
    first, second = object(), object()
    log: list[str] = []
    # the second channel's tag 1 does not wait for the first channel's tag 2
    blocked = asyncio.create_task(_deliver(order, first, 2, log))
    await _deliver(order, second, 1, log)
    assert log == ["start 1", "end 1"]
    await _deliver(order, first, 1, log)
    await blocked
    assert log[2:] == ["start 1", "end 1", "start 2", "end 2"]


async def test_a_predecessor_that_never_arrives_stalls_the_line_only_for_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ordering, "STALL_S", 0.05)
    order = InOrder()
    channel = object()
    log: list[str] = []
    # tag 2 never comes: 3 and 4 go on after the stall, still in order
    await asyncio.gather(
        _deliver(order, channel, 4, log),
        _deliver(order, channel, 1, log),
        _deliver(order, channel, 3, log),
    )
    assert log == ["start 1", "end 1", "start 3", "end 3", "start 4", "end 4"]
