"""RabbitMQ SIGKILLed while the relay publishes: nothing is lost, consumers come back.

FastStream's tracker has reports of consumers not restored after a broker loss; this
proves ours are, on the real broker, without restarting the "service" (the broker
object, relay and subscriber here live on in this process across the outage).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from peertrain.common.bus import Inbox, OutboxRelay
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.diagnostics import DiagnosticPinged


@pytest.mark.timeout(1500)
async def test_rabbitmq_killed_while_relaying_ten_thousand_events(
    event_log: EventLog,
    broker: Any,
    consume: Any,
    mongo: Any,
    settings: Any,
    unique: Callable[[str], str],
    eventually: Any,
    stack: Callable[..., str],
) -> None:
    note = unique("restart")
    seen: set[str] = set()
    inbox = Inbox(mongo[settings.own_db], consumer=unique("inbox"))

    async def on_event(event: RecordedEvent) -> None:
        if event.data.note == note:  # type: ignore[union-attr]
            seen.add(event.id)

    await consume(unique("test.restart"), on_event, inbox=inbox, delivery_limit=20)
    await asyncio.sleep(3)  # let the new quorum queue settle before the broker dies
    relay = OutboxRelay(event_log, broker, producer="test", batch_size=500)
    relay.start()
    try:

        async def writer(w: int) -> None:
            for s in range(10):
                for k in range(25):
                    batch = [
                        NewEvent.of(DiagnosticPinged(n=k * 10 + j, note=note), producer="test")
                        for j in range(10)
                    ]
                    await event_log.append(f"r:{note}:{w}:{s}", batch, expected_version=k * 10)

        writers = asyncio.gather(*(writer(w) for w in range(4)))
        await eventually(lambda: len(seen) >= 500, what="first deliveries")
        await asyncio.to_thread(stack, "kill", "rabbitmq")
        killed_at = len(seen)
        await asyncio.to_thread(stack, "start", "rabbitmq")
        await writers
        await eventually(lambda: len(seen) >= 10_000, timeout=1200, what="all 10k delivered")
        assert killed_at < 10_000  # the broker really died mid-stream
        assert len(seen) == 10_000
        await eventually(lambda: _outbox_empty(event_log), timeout=120, what="outbox drained")
    finally:
        await relay.stop()


async def _outbox_empty(log: EventLog) -> bool:
    return await log.count_unpublished() == 0
