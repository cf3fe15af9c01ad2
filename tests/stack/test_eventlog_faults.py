"""The event backbone under store and link faults, on the real servers.

* PostgreSQL (FerretDB's backend) SIGKILLed while 10,000 events are appended, then
  started again: every append that returned is in the log and reaches a consumer, once
  in effect (its effect is a write guarded by the inbox, which absorbs republished and
  retried copies); none is lost.
* The link to RabbitMQ hangs (a TCP proxy that stops forwarding, not a clean close):
  the relay keeps the events, delivers all of them within seconds once the link comes
  back, and nothing is restarted (the broker object, relay and subscriber live on in
  this process). The hang lasts HANG_S, 20 s: issue 11 said 60, issue 13 asks for
  shorter fault windows. Both windows take the same path: the relay's publishes time
  out every 5 s (four times in 20 s), and the AMQP heartbeat notices a hang in neither
  (60 s; aiormq declares a silent link dead after 3 x 61 s).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from hanging_proxy import HangingProxy
from pymongo.errors import PyMongoError

from peertrain.common.bus import Inbox, OutboxRelay, make_broker
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.diagnostics import DiagnosticPinged
from peertrain.testkit.common import stack_port


def ping(n: int, note: str) -> NewEvent:
    return NewEvent.of(DiagnosticPinged(n=n, note=note), producer="test")


async def append_until_stored(
    log: EventLog, stream: str, events: list[NewEvent], version: int
) -> list[RecordedEvent]:
    """Retry one append through an outage: the same event ids, so a retry is idempotent."""
    delay = 0.2
    while True:
        try:
            return await log.append(stream, events, expected_version=version)
        except (PyMongoError, ConnectionError, OSError):
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)


@pytest.mark.timeout(1200)
async def test_postgres_killed_while_ten_thousand_events_are_appended(
    event_log: EventLog,
    broker: Any,
    consume: Any,
    mongo: Any,
    settings: Any,
    unique: Callable[[str], str],
    eventually: Any,
    stack: Callable[..., str],
) -> None:
    note = unique("pgkill")
    # The consumer's effect is a write made atomic with its inbox record: a failure
    # between effect and record (the store dies) must not apply it twice.
    effects = mongo[settings.own_db][unique("effects").replace(".", "_")]
    seen: set[str] = set()

    async def on_event(event: RecordedEvent) -> None:
        if event.data.note == note:  # type: ignore[union-attr]
            await Inbox.apply_once_to(effects, event.id, event.id, {"$inc": {"applied": 1}})
            seen.add(event.id)

    await consume(unique("test.pgkill"), on_event, delivery_limit=20)
    relay = OutboxRelay(event_log, broker, producer="test")
    relay.start()
    returned: list[RecordedEvent] = []
    try:

        async def writer(w: int) -> None:
            for s in range(25):
                for k in range(10):
                    batch = [ping(k * 10 + j, note) for j in range(10)]
                    stream = f"pg:{note}:{w}:{s}"
                    returned.extend(await append_until_stored(event_log, stream, batch, k * 10))

        writers = asyncio.gather(*(writer(w) for w in range(4)))
        await eventually(lambda: len(returned) >= 2_000, timeout=300, what="first appends")
        await asyncio.to_thread(stack, "kill", "postgres")
        killed_at = len(returned)
        await asyncio.sleep(2)  # appends fail meanwhile and are retried
        await asyncio.to_thread(stack, "start", "postgres")
        await asyncio.wait_for(writers, timeout=600)
        assert killed_at < 10_000  # PostgreSQL really died mid-stream
        assert len({e.id for e in returned}) == 10_000
        # every append that returned is in the log, in its stream's order
        for w in range(4):
            for s in range(25):
                stored = await event_log.read_stream(f"pg:{note}:{w}:{s}")
                assert [e.seq for e in stored] == list(range(1, 101))
        ids = {e.id for e in returned}
        await eventually(lambda: ids <= seen, timeout=300, what="all consumed")
        counts = {d["_id"]: d["applied"] async for d in effects.find({})}
        assert set(counts) == ids
        assert set(counts.values()) == {1}  # once in effect: republished copies absorbed
        await eventually(lambda: _outbox_empty(event_log), timeout=120, what="outbox drained")
    finally:
        await relay.stop()


HANG_S = 20
"""How long the link to RabbitMQ hangs (see the module's docstring)."""


@pytest.mark.timeout(900)
async def test_a_hung_link_to_rabbitmq_loses_nothing_and_recovers_in_seconds(
    event_log: EventLog,
    broker: Any,
    consume: Any,
    mongo: Any,
    settings: Any,
    unique: Callable[[str], str],
    eventually: Any,
) -> None:
    note = unique("hang")
    seen: set[str] = set()
    inbox = Inbox(mongo[settings.own_db], consumer=unique("inbox"))

    async def on_event(event: RecordedEvent) -> None:
        if event.data.note == note:  # type: ignore[union-attr]
            seen.add(event.id)

    # The consumer talks to RabbitMQ directly; only the relay's link goes through the proxy.
    await consume(unique("test.hang"), on_event, inbox=inbox, delivery_limit=20)
    proxy = HangingProxy(stack_port(5672))
    await proxy.start()
    url = settings.amqp_url.get_secret_value().replace(f":{stack_port(5672)}/", f":{proxy.port}/")
    relay_broker = make_broker(url)
    await relay_broker.connect()
    relay = OutboxRelay(event_log, relay_broker, producer="test", publish_timeout_s=5.0)
    relay.start()
    try:
        first = await event_log.append(f"h:{note}:0", [ping(0, note)], expected_version=0)
        await eventually(lambda: first[0].id in seen, what="the link works")
        proxy.flowing.clear()
        appended: list[RecordedEvent] = []
        for k in range(20):  # appends go on while the link hangs: the log is not the bus
            appended += await event_log.append(
                f"h:{note}:1", [ping(k * 10 + j, note) for j in range(10)], expected_version=k * 10
            )
        await asyncio.sleep(HANG_S)
        assert not ({e.id for e in appended} & seen)  # nothing went through meanwhile
        assert relay.pending >= len(appended)  # kept, not dropped
        proxy.flowing.set()
        ids = {e.id for e in appended}
        # "within seconds": a generous bound, so a slow machine does not fail it
        await eventually(lambda: ids <= seen, timeout=60, what="delivered after the hang")
        await eventually(lambda: _outbox_empty(event_log), timeout=120, what="outbox drained")
    finally:
        proxy.flowing.set()
        await relay.stop()
        await relay_broker.stop()
        await proxy.stop()


async def _outbox_empty(log: EventLog) -> bool:
    return await log.count_unpublished() == 0
