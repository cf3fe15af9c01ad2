"""Outages are waited out; failures that repeat are dead-lettered, then re-driven: each
message the way it first came (its exchange and routing key), and an instance queue's
dead letters outlive the instance."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import aio_pika
import httpx
from faststream.rabbit import RabbitMessage

from peertrain.common.bus import TELEMETRY, OutboxRelay, Subscriptions, dlq_name, make_broker
from peertrain.common.bus.redrive import dead_letter_queues, redrive
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.diagnostics import DIAGNOSTIC_PINGED, DiagnosticPinged
from peertrain.testkit.common import RABBIT_API

from .conftest import delete_queues

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


async def test_redriven_peer_telemetry_keeps_its_routing_key(
    broker: Any, settings: Any, unique: Callable[[str], str], eventually: Any
) -> None:
    # a raw subscription reads the sender from the routing key, as peer telemetry does
    queue, peer = unique("test.telemetry"), uuid.uuid4().hex[:12]
    kind = f"probe{uuid.uuid4().hex[:6]}"
    fixed: list[bool] = []
    keys: list[str] = []

    async def on_message(message: RabbitMessage) -> None:
        if not fixed:
            raise ValueError("a bug: fails the same way every time")
        keys.append(message.raw_message.routing_key or "")

    subs = Subscriptions(delivery_limit=1)
    subs.add_messages(queue, [f"peer.*.{kind}"], on_message, exchange=TELEMETRY)
    await subs.declare(broker)
    subs.attach(broker)
    await broker.start()
    amqp = settings.amqp_url.get_secret_value()
    conn = await aio_pika.connect(amqp)
    async with conn:
        channel = await conn.channel()
        exchange = await channel.get_exchange(TELEMETRY.name)
        await exchange.publish(aio_pika.Message(b"{}"), routing_key=f"peer.{peer}.{kind}")

    async def dead_lettered() -> bool:
        return await _count(amqp, dlq_name(queue)) == 1

    await eventually(dead_lettered, timeout=60, what="the message dead-lettered")
    fixed.append(True)
    assert await redrive(amqp, [queue]) == {queue: 1}
    await eventually(lambda: keys, timeout=60, what="the redriven message")
    assert keys == [f"peer.{peer}.{kind}"]
    assert await _count(amqp, dlq_name(queue)) == 0


async def test_an_instance_queues_dead_letters_outlive_it_and_are_redriven(
    event_log: EventLog, settings: Any, unique: Callable[[str], str], eventually: Any
) -> None:
    base, note = unique("test.feed"), unique("n")
    amqp = settings.amqp_url.get_secret_value()
    handled: list[str] = []

    async def failing(event: RecordedEvent) -> None:
        if event.data.note == note:  # type: ignore[union-attr]
            raise ValueError("a bug in the first instance")

    async def working(event: RecordedEvent) -> None:
        if event.data.note == note:  # type: ignore[union-attr]
            handled.append(event.id)

    async def instance(name: str, handler: Any) -> Any:
        b = make_broker(amqp)
        await b.connect()
        subs = Subscriptions(delivery_limit=1)
        subs.add(f"{base}.{name}", [DIAGNOSTIC_PINGED], handler, expires_s=2)
        await subs.declare(b)
        subs.attach(b)
        await b.start()
        return b

    first = await instance("one", failing)
    relay = OutboxRelay(event_log, first, producer="test")
    relay.start()
    try:
        [event] = await event_log.append(f"redrive:{note}", [ping(note)], expected_version=0)

        async def dead_lettered() -> bool:
            return await _count(amqp, dlq_name(base)) == 1

        await eventually(dead_lettered, timeout=60, what="dead-lettered into the shared DLQ")
    finally:
        await relay.stop()
        await first.stop()

    async def instance_queue_gone() -> bool:
        return await _count(amqp, f"{base}.one") < 0

    await eventually(instance_queue_gone, timeout=60, what="the first instance's queue expired")
    dlq = await _queue_info(dlq_name(base))
    assert "x-expires" not in dlq["arguments"]
    # declared with it and never used, the DLQ would have expired before the queue did
    assert await _count(amqp, dlq_name(base)) == 1

    second = await instance("two", working)
    try:
        assert await redrive(amqp, [base]) == {base: 1}
        await eventually(lambda: handled == [event.id], timeout=60, what="redriven to instance two")
    finally:
        await second.stop()
        delete_queues([f"{base}.two", dlq_name(base)])


async def _count(amqp: str, name: str) -> int:
    """Messages in ``name`` (exact); -1 when there is no such queue."""
    conn = await aio_pika.connect(amqp)
    async with conn:
        channel = await conn.channel()
        try:
            queue = await channel.declare_queue(name, passive=True)
        except aio_pika.exceptions.ChannelNotFoundEntity:
            return -1
        return queue.declaration_result.message_count or 0


async def _queue_info(name: str) -> dict[str, Any]:
    async with httpx.AsyncClient(auth=("admin", "admin"), timeout=10) as http:
        r = await http.get(f"{RABBIT_API}/queues/%2F/{quote(name, safe='')}")
        r.raise_for_status()
        return dict(r.json())
