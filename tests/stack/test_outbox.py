"""Outbox relay and idempotent consumers on the real RabbitMQ and MongoDB-wire server."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from faststream.rabbit import QueueType, RabbitQueue

from peertrain.common.bus import Inbox, OutboxRelay, dlq_name
from peertrain.common.clock import ManualClock
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.diagnostics import DiagnosticPinged


def ping(n: int, note: str = "") -> NewEvent:
    return NewEvent.of(DiagnosticPinged(n=n, note=note), producer="test")


class Projection:
    """Counts distinct events per stream and records order violations."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.last_seq: dict[str, int] = defaultdict(int)
        self.out_of_order: list[tuple[str, int, int]] = []

    async def apply(self, event: RecordedEvent) -> None:
        if event.seq != self.last_seq[event.stream] + 1:
            self.out_of_order.append((event.stream, self.last_seq[event.stream], event.seq))
        self.last_seq[event.stream] = max(self.last_seq[event.stream], event.seq)
        self.seen.add(event.id)


@pytest.mark.timeout(1500)
async def test_ten_thousand_events_from_four_writers_reach_a_consumer_in_order(
    event_log: EventLog,
    broker: Any,
    consume: Any,
    mongo: Any,
    settings: Any,
    unique: Callable[[str], str],
    eventually: Any,
) -> None:
    note = unique("n")
    projection = Projection()
    inbox = Inbox(mongo[settings.own_db], consumer=unique("inbox"))

    async def on_event(event: RecordedEvent) -> None:
        if event.data.note == note:  # type: ignore[union-attr]
            await projection.apply(event)

    await consume(unique("test.outbox"), on_event, inbox=inbox)
    relay = OutboxRelay(event_log, broker, producer="test", batch_size=500)
    relay.start()
    try:

        async def writer(w: int) -> None:
            # 25 streams per writer, 100 events each, appended 10 at a time
            for s in range(25):
                stream = f"bench:{note}:{w}:{s}"
                for k in range(10):
                    batch = [ping(k * 10 + j, note) for j in range(10)]
                    await event_log.append(stream, batch, expected_version=k * 10)

        await asyncio.gather(*(writer(w) for w in range(4)))
        await eventually(lambda: len(projection.seen) >= 10_000, timeout=1200, what="10k events")
        await asyncio.sleep(1)  # a late duplicate would show up here
        assert len(projection.seen) == 10_000
        assert projection.out_of_order == []
        assert all(v == 100 for v in projection.last_seq.values())
        assert len(projection.last_seq) == 100
        await eventually(lambda: _zero(event_log), what="outbox drained")
    finally:
        await relay.stop()


async def _zero(log: EventLog) -> bool:
    return await log.count_unpublished() == 0


async def test_unroutable_event_stays_in_the_outbox(event_log: EventLog, broker: Any) -> None:
    await broker.start()
    orphan = NewEvent.of(DiagnosticPinged(n=1), producer="test").model_copy(
        update={"type": "diagnostic.nobody_listens"}
    )
    await event_log.append("orphan:1", [orphan], expected_version=0)
    relay = OutboxRelay(event_log, broker, producer="test", unroutable_retry_s=60)
    assert await relay.relay_once() == 0
    assert await event_log.count_unpublished() == 1


async def test_an_event_unroutable_past_the_grace_period_is_left_in_the_log_only(
    event_log: EventLog, broker: Any
) -> None:
    await broker.start()
    # an old backlog (appended long ago, published late after an outage) gets its full
    # grace: it counts from the first unroutable return, not from the event's own time
    old = datetime.now(UTC) - timedelta(seconds=600)
    orphan = NewEvent.of(DiagnosticPinged(n=2), producer="test").model_copy(
        update={"type": "diagnostic.nobody_listens", "occurred_at": old}
    )
    await event_log.append("orphan:2", [orphan], expected_version=0)
    clock = ManualClock()
    relay = OutboxRelay(event_log, broker, producer="test", unroutable_grace_s=1.0, clock=clock)
    relay.unroutable_retry_s = 0.1
    assert await relay.relay_once() == 0
    assert await event_log.count_unpublished() == 1  # kept: its grace has just begun
    fresh = NewEvent.of(DiagnosticPinged(n=3), producer="test").model_copy(
        update={"type": "diagnostic.nobody_listens"}
    )
    await event_log.append("orphan:2", [fresh], expected_version=1)
    clock.advance(1.2)  # on the relay's clock: the old one's retry is due and its grace over
    await relay.relay_once()
    # the old one is settled (still in the log), the fresh one keeps waiting for a queue
    assert await event_log.count_unpublished() == 1
    assert [e.data.n for e in await event_log.read_stream("orphan:2")] == [2, 3]  # type: ignore[union-attr]


async def test_a_poison_event_is_dead_lettered_and_the_rest_flow(
    event_log: EventLog,
    broker: Any,
    consume: Any,
    unique: Callable[[str], str],
    eventually: Any,
) -> None:
    queue = unique("test.poison")
    handled: list[int] = []
    attempts: list[int] = []

    async def on_event(event: RecordedEvent) -> None:
        n = event.data.n  # type: ignore[union-attr]
        if n == 3:
            attempts.append(n)
            raise ValueError("cannot handle event 3")
        handled.append(n)

    await consume(queue, on_event, delivery_limit=3)
    await event_log.append("poison:1", [ping(n) for n in range(1, 8)], expected_version=0)
    relay = OutboxRelay(event_log, broker, producer="test")
    await relay.relay_once()
    # a body that is not an event at all is rejected at once
    await broker.publish(b"not json", queue=queue, persist=True)

    await eventually(lambda: sorted(handled) == [1, 2, 4, 5, 6, 7], what="others handled")
    dlq = await broker.declare_queue(RabbitQueue(dlq_name(queue), queue_type=QueueType.QUORUM))

    async def dead_letters() -> list[bytes]:
        found = []
        while (msg := await dlq.get(no_ack=True, fail=False)) is not None:
            found.append(msg.body)
        return found

    bodies: list[bytes] = []

    async def both_dead() -> bool:
        bodies.extend(await dead_letters())
        return len(bodies) >= 2

    await eventually(both_dead, what="two dead letters")
    assert b"not json" in bodies
    poison = [json.loads(b) for b in bodies if b != b"not json"]
    assert poison[0]["data"]["n"] == 3
    # x-delivery-limit counts redeliveries: 1 delivery + 3 redeliveries, then the DLQ
    assert len(attempts) == 4
