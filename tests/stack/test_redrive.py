"""Outages are waited out; failures that repeat are dead-lettered, then re-driven."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from peertrain.common.bus import OutboxRelay, dlq_name
from peertrain.common.bus.redrive import dead_letter_queues, redrive
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.diagnostics import DiagnosticPinged
from peertrain.common.testing import RABBIT_API

MANAGEMENT = RABBIT_API.removesuffix("/api")


def ping(note: str) -> NewEvent:
    return NewEvent.of(DiagnosticPinged(n=1, note=note), producer="test")


async def test_an_outage_does_not_use_up_the_delivery_limit(
    event_log: EventLog,
    broker: Any,
    consume: Any,
    settings: Any,
    unique: Callable[[str], str],
    eventually: Any,
) -> None:
    note, queue = unique("n"), unique("test.outage")
    tries: list[int] = []

    async def on_event(event: RecordedEvent) -> None:
        if event.data.note != note:  # type: ignore[union-attr]
            return
        tries.append(1)
        if len(tries) < 8:  # a dependency away for a while: more tries than the limit
            raise ConnectionError("the store is away")

    await consume(queue, on_event, delivery_limit=1)
    relay = OutboxRelay(event_log, broker, producer="test")
    relay.start()
    try:
        await event_log.append(f"redrive:{note}", [ping(note)], expected_version=0)
        await eventually(lambda: len(tries) >= 8, timeout=120, what="handled after the outage")
    finally:
        await relay.stop()
    amqp = settings.amqp_url.get_secret_value()
    await asyncio.sleep(6)  # the management API's counts lag a few seconds
    assert (await dead_letter_queues(MANAGEMENT, amqp)).get(dlq_name(queue), 0) == 0


async def test_a_dead_lettered_event_is_redriven_once_the_cause_is_fixed(
    event_log: EventLog,
    broker: Any,
    consume: Any,
    settings: Any,
    unique: Callable[[str], str],
    eventually: Any,
) -> None:
    note, queue = unique("n"), unique("test.redrive")
    fixed: list[bool] = []
    handled: list[str] = []

    async def on_event(event: RecordedEvent) -> None:
        if event.data.note != note:  # type: ignore[union-attr]
            return
        if not fixed:
            raise ValueError("a bug: fails the same way every time")
        handled.append(event.id)

    await consume(queue, on_event, delivery_limit=1)
    relay = OutboxRelay(event_log, broker, producer="test")
    relay.start()
    amqp = settings.amqp_url.get_secret_value()
    try:
        [event] = await event_log.append(f"redrive:{note}", [ping(note)], expected_version=0)

        async def dead_lettered() -> bool:
            return (await dead_letter_queues(MANAGEMENT, amqp)).get(dlq_name(queue), 0) == 1

        await eventually(dead_lettered, timeout=120, what="the event dead-lettered")
        assert handled == []
        fixed.append(True)
        assert await redrive(amqp, [queue], dry_run=True) == {queue: 1}
        assert await redrive(amqp, [queue]) == {queue: 1}
        await eventually(lambda: handled == [event.id], timeout=60, what="the redriven event")

        async def dlq_empty() -> bool:  # the management API's counts lag a few seconds
            return (await dead_letter_queues(MANAGEMENT, amqp)).get(dlq_name(queue), 0) == 0

        await eventually(dlq_empty, timeout=60, what="the DLQ empty")
    finally:
        await relay.stop()
