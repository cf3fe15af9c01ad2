"""A subscription's pieces composed as on the platform, driven through FastStream's test broker.

The decoder hands the handler a typed event and rejects a malformed body; the inbox
makes a second delivery of an event a success with no second effect; a dependency that
is away is waited out in place; a handler that fails for good has its message set aside.
"""

from __future__ import annotations

from typing import Any

import pytest
from faststream.rabbit import RabbitBroker, RabbitMessage, TestRabbitBroker
from prometheus_client import REGISTRY

from peertrain.common.bus import TELEMETRY, Inbox, Subscriptions, failures
from peertrain.common.events import NewEvent, RecordedEvent, to_message
from peertrain.common.events.diagnostics import DIAGNOSTIC_PINGED, DiagnosticPinged


def _event(n: int = 1) -> RecordedEvent:
    new = NewEvent.of(DiagnosticPinged(n=n), producer="test", actor="u1", correlation_id="c")
    fields = new.model_dump(exclude={"data"}) | {"stream": "s:1", "seq": n, "position": n}
    return RecordedEvent(**fields, data=new.data)


class _Collection:
    def __init__(self) -> None:
        self.docs: dict[str, dict[str, Any]] = {}

    async def find_one(self, query: dict[str, Any]) -> dict[str, Any] | None:
        return self.docs.get(query["_id"])

    async def insert_one(self, doc: dict[str, Any]) -> None:
        self.docs[doc["_id"]] = doc


class _Db:
    def __init__(self) -> None:
        self.collection = _Collection()

    def __getitem__(self, name: str) -> _Collection:
        return self.collection


def _count(queue: str, outcome: str) -> float:
    value = REGISTRY.get_sample_value(
        "peertrain_events_consumed_total", {"queue": queue, "outcome": outcome}
    )
    return value or 0.0


async def test_the_handler_gets_the_decoded_event_once_per_event_id() -> None:
    seen: list[RecordedEvent] = []

    async def on_event(event: RecordedEvent) -> None:
        seen.append(event)

    subs = Subscriptions()
    inbox = Inbox(_Db(), "t.once")  # type: ignore[arg-type]
    subs.add("t.once", [DIAGNOSTIC_PINGED], on_event, inbox=inbox)
    broker = RabbitBroker(apply_types=False, logger=None)
    subs.attach(broker)
    event = _event()
    duplicates = _count("t.once", "duplicate")
    async with TestRabbitBroker(broker) as br:
        await br.publish(to_message(event), queue="t.once")
        await br.publish(to_message(event), queue="t.once")
    assert seen == [event]
    assert isinstance(seen[0].data, DiagnosticPinged)
    assert _count("t.once", "duplicate") == duplicates + 1


async def test_a_malformed_body_is_rejected_before_the_handler() -> None:
    called: list[RecordedEvent] = []

    async def on_event(event: RecordedEvent) -> None:
        called.append(event)

    subs = Subscriptions()
    subs.add("t.malformed", [DIAGNOSTIC_PINGED], on_event)
    broker = RabbitBroker(apply_types=False, logger=None)
    subs.attach(broker)
    rejected = _count("t.malformed", "rejected")
    async with TestRabbitBroker(broker) as br:
        await br.publish(b'{"not": "an event"}', queue="t.malformed")
    assert called == []
    assert _count("t.malformed", "rejected") == rejected + 1


async def test_a_dependency_away_is_waited_out_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failures, "RETRY_BASE_S", 0.0)
    tries: list[int] = []

    async def on_event(event: RecordedEvent) -> None:
        tries.append(event.seq)
        if len(tries) < 3:
            raise ConnectionError("the store is away")

    subs = Subscriptions()
    subs.add("t.outage", [DIAGNOSTIC_PINGED], on_event)
    broker = RabbitBroker(apply_types=False, logger=None)
    subs.attach(broker)
    async with TestRabbitBroker(broker) as br:
        await br.publish(to_message(_event(4)), queue="t.outage")
    assert tries == [4, 4, 4]
    assert _count("t.outage", "applied") >= 1


async def test_a_handler_that_fails_for_good_has_its_message_set_aside() -> None:
    tries: list[bytes] = []

    async def on_message(message: RabbitMessage) -> None:
        tries.append(message.body)
        raise ValueError("a bug")

    subs = Subscriptions()
    subs.add_messages("t.bug", ["peer.#"], on_message, exchange=TELEMETRY)
    broker = RabbitBroker(apply_types=False, logger=None)
    subs.attach(broker)
    set_aside = _count("t.bug", "set_aside")
    async with TestRabbitBroker(broker) as br:
        await br.publish(b"x", queue="t.bug")
    assert tries == [b"x"]  # never retried in place
    assert _count("t.bug", "set_aside") == set_aside + 1


async def test_a_handler_failing_on_the_last_allowed_delivery_dead_letters_it() -> None:
    async def on_event(event: RecordedEvent) -> None:
        raise ValueError("a bug")

    subs = Subscriptions(delivery_limit=5)
    subs.add("t.last", [DIAGNOSTIC_PINGED], on_event)
    broker = RabbitBroker(apply_types=False, logger=None)
    subs.attach(broker)
    set_aside = _count("t.last", "set_aside")
    dead = REGISTRY.get_sample_value("peertrain_events_rejected_total", {"queue": "t.last"}) or 0.0
    async with TestRabbitBroker(broker) as br:
        await br.publish(to_message(_event()), queue="t.last", headers={"x-delivery-count": 5})
    assert (
        REGISTRY.get_sample_value("peertrain_events_rejected_total", {"queue": "t.last"})
        == dead + 1
    )
    assert _count("t.last", "set_aside") == set_aside
