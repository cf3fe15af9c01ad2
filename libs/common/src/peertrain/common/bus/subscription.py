"""Subscribing typed event handlers to durable, dead-lettered queues.

A handler receives a typed :class:`~peertrain.common.events.RecordedEvent`. Outcomes:

* it returns: the message is acknowledged (after the inbox recorded the event);
* the event was already processed: acknowledged, no second effect;
* the body is not a valid event: rejected at once, so it lands in ``<queue>.dlq``;
* the handler raises: the message is set aside (returned to the queue, which delivers
  it again after the messages already on their way), never retried in place while the
  queue waits, and dead-lettered on the last delivery the queue's limit allows
  (redeliveries after a crash count too);
* the handler raises because a dependency is away (the event store, the bucket or the
  broker: :func:`~peertrain.common.faults.is_transient`): it keeps the message and tries
  again with backoff up to :data:`RETRY_OUTAGE_MAX_S` apart, for as long as
  :data:`OUTAGE_BUDGET_S`, without using up the delivery limit. Every message would
  fail the same way meanwhile, so dead-lettering them would only strand facts. A message
  that keeps failing so while the next would pass holds the line for at most
  :data:`~peertrain.common.bus.failures.HOLD_S` at a time (the rules:
  :mod:`peertrain.common.bus.failures`).

Dead-lettered messages can be moved back once the cause is fixed: ``make redrive``
(:mod:`peertrain.common.bus.redrive`).

Messages are handled strictly one after the other, in queue order, which keeps each
stream's events in order, but the channel prefetches a window of them
(:data:`PIPELINE`): the client runs every delivery in its own task, and each task waits
until its predecessor on the channel has been handled (:class:`InOrder`). With a
prefetch of 1 every message cost a broker round trip before the next could even be
sent; measured on a quorum queue, that capped an ordered consumer at a few hundred
events a second. A message that failed is the exception to the order: it goes back
behind the window, since holding the line for it would hold every other message (one
peer sending a message that fails each time stalled every peer's updates).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import NoReturn

import structlog
from faststream.exceptions import NackMessage, RejectMessage
from faststream.middlewares import AckPolicy
from faststream.rabbit import Channel, RabbitBroker, RabbitExchange, RabbitMessage

from peertrain.common.events import MalformedEvent, RecordedEvent, UnknownEventType, decode_message
from peertrain.common.faults import is_transient
from peertrain.common.metrics import DEAD_LETTERED, EVENTS_CONSUMED

from .failures import (
    OUTAGE_BUDGET_S,
    RETRY_OUTAGE_MAX_S,
    DeadLetter,
    Failure,
    Outage,
    Retry,
    SetAside,
    decide,
)
from .inbox import Inbox
from .topology import EVENTS, declare_queue, dlq_name, quorum_queue

__all__ = [
    "OUTAGE_BUDGET_S",
    "PIPELINE",
    "RETRY_OUTAGE_MAX_S",
    "EventHandler",
    "InOrder",
    "Subscription",
    "Subscriptions",
]

log = structlog.get_logger(__name__)

EventHandler = Callable[[RecordedEvent], Awaitable[None]]
MessageHandler = Callable[[RabbitMessage], Awaitable[None]]

PIPELINE = 32
"""Messages prefetched per subscription (handled one after the other, in order)."""

STALL_S = 30.0
"""How long a delivery waits for a predecessor that never reached its handler."""


@dataclass
class _Line:
    next: int = 1
    running: bool = False
    waiting: dict[int, asyncio.Event] = field(default_factory=dict)


class InOrder:
    """Handle a channel's deliveries one at a time, in delivery-tag order.

    RabbitMQ numbers a channel's deliveries 1, 2, 3, ... (a new channel after a
    reconnect starts again at 1), and the client handles each in a task of its own,
    which may reach the handler in another order. A delivery waits here until the one
    before it on its channel has been handled; a finished delivery wakes only its
    successor (waking every waiter cost a task per prefetched message for each message
    handled). Should a predecessor never arrive (it cannot, short of a bug in the
    client), the line moves on after :data:`STALL_S`.
    """

    def __init__(self) -> None:
        self._lines: dict[int, _Line] = {}

    @asynccontextmanager
    async def turn(self, channel: object, tag: int) -> AsyncIterator[None]:
        """Wait for every earlier delivery of ``channel``; hold the line meanwhile."""
        line = self._lines.setdefault(id(channel), _Line())
        while line.next < tag:
            wake = line.waiting.setdefault(tag, asyncio.Event())
            try:
                await asyncio.wait_for(wake.wait(), STALL_S)
            except TimeoutError:
                if not line.running and min(line.waiting) == tag:
                    log.warning("a delivery never reached its handler", missing=line.next)
                    line.next = tag
        line.waiting.pop(tag, None)
        line.running = True
        try:
            yield
        finally:
            line.next = max(line.next, tag + 1)
            line.running = False
            successor = line.waiting.get(line.next)
            if successor is not None:
                successor.set()


@dataclass(frozen=True)
class Subscription:
    """One queue, the event types bound to it, and its handler."""

    queue: str
    routing_keys: tuple[str, ...]
    handler: EventHandler
    inbox: Inbox | None
    exchange: RabbitExchange = EVENTS
    prefetch: int = PIPELINE
    channel: Channel = field(default_factory=Channel)
    raw: MessageHandler | None = None
    """Set for non-event messages (peer telemetry): gets the message itself."""
    expires_s: int | None = None
    """Set for one instance's own queue: deleted once that long without a consumer."""
    dead_letters: str | None = None
    """The DLQ, when not ``<queue>.dlq`` (one shared by a service's instance queues)."""


@dataclass
class Subscriptions:
    """A service's event subscriptions, declared and started together.

    Usage::

        subs = Subscriptions(delivery_limit=5)
        subs.add("registry.enrollments", [PEER_ENROLLED], on_enrolled, inbox=inbox)
        await subs.declare(broker)   # queues, DLQs, bindings
        subs.attach(broker)          # FastStream subscribers
        await broker.start()
    """

    delivery_limit: int = 5
    observe: Callable[[RecordedEvent], None] | None = None
    """Told every event decoded, before its handler (the service's log learns the
    positions other processes claimed: :meth:`EventLog.observed`)."""
    items: list[Subscription] = field(default_factory=list)

    def add(
        self,
        queue: str,
        routing_keys: Sequence[str],
        handler: EventHandler,
        *,
        inbox: Inbox | None = None,
        exchange: RabbitExchange = EVENTS,
        prefetch: int = PIPELINE,
        expires_s: int | None = None,
        dead_letters: str | None = None,
    ) -> Subscription:
        """Register ``handler`` for the event types ``routing_keys`` on ``queue``.

        Messages are handled one after the other, in queue order; ``prefetch`` is how
        many the broker sends ahead (see the module docstring). ``expires_s`` makes it
        one instance's queue (every instance hears every event): the broker deletes it
        once that long without a consumer. Its dead letters then go to ``dead_letters``,
        a DLQ every instance shares and that never expires (by default
        ``<base>.dlq`` for a queue named ``<base>.<instance>``).
        """
        if expires_s is not None and dead_letters is None:
            dead_letters = dlq_name(queue.rpartition(".")[0] or queue)
        channel = Channel(prefetch_count=prefetch)
        sub = Subscription(
            queue,
            tuple(routing_keys),
            handler,
            inbox,
            exchange,
            prefetch,
            channel,
            expires_s=expires_s,
            dead_letters=dead_letters,
        )
        self.items.append(sub)
        return sub

    def add_messages(
        self,
        queue: str,
        routing_keys: Sequence[str],
        handler: MessageHandler,
        *,
        exchange: RabbitExchange,
        prefetch: int = PIPELINE,
    ) -> Subscription:
        """Register ``handler`` for raw messages (not events), e.g. peer telemetry.

        The same outcomes as for events: return -> ack; raise ``RejectMessage`` ->
        dead-lettered at once; raise anything else -> set aside (see the module docstring).
        """

        async def never(_: RecordedEvent) -> None:  # pragma: no cover - raw subscriptions
            raise RuntimeError("raw subscription")

        channel = Channel(prefetch_count=prefetch)
        sub = Subscription(
            queue, tuple(routing_keys), never, None, exchange, prefetch, channel, raw=handler
        )
        self.items.append(sub)
        return sub

    async def declare(self, broker: RabbitBroker) -> None:
        """Declare every queue, its dead-letter queue and its bindings."""
        for sub in self.items:
            await declare_queue(
                broker,
                sub.queue,
                exchange=sub.exchange,
                routing_keys=sub.routing_keys,
                delivery_limit=self.delivery_limit,
                channel=sub.channel,
                expires_s=sub.expires_s,
                dead_letters=sub.dead_letters,
            )

    def attach(self, broker: RabbitBroker) -> None:
        """Create the FastStream subscribers (call before ``broker.start()``)."""
        for sub in self.items:
            broker.subscriber(
                quorum_queue(
                    sub.queue,
                    delivery_limit=self.delivery_limit,
                    expires_s=sub.expires_s,
                    dead_letters=sub.dead_letters,
                ),
                channel=sub.channel,
                ack_policy=AckPolicy.NACK_ON_ERROR,
                title=sub.queue,
                decoder=_the_message_itself,
            )(_consumer(sub, self.delivery_limit, self.observe))


def _consumer(
    sub: Subscription,
    delivery_limit: int,
    observe: Callable[[RecordedEvent], None] | None = None,
) -> Callable[[RabbitMessage], Awaitable[None]]:
    order = InOrder()
    outage = Outage()

    async def consume(message: RabbitMessage) -> None:
        raw = message.raw_message
        loop = asyncio.get_running_loop()
        async with order.turn(raw.channel, raw.delivery_tag or 0):
            # Deliveries before this one (set aside, a crash, a restart) count too.
            deliveries = _delivery_count(message)
            tries, first_failure = 0, 0.0
            while True:
                try:
                    if sub.raw is not None:
                        await _handle_raw(sub, sub.raw, message)
                    else:
                        await _handle(sub, message, observe)
                except RejectMessage:
                    raise
                except Exception as exc:
                    now = loop.time()
                    tries, first_failure = tries + 1, first_failure or now
                    failure = Failure(is_transient(exc), deliveries, tries, now - first_failure)
                    decision = decide(failure, outage, delivery_limit=delivery_limit, now=now)
                    if isinstance(decision, Retry):
                        await asyncio.sleep(decision.delay_s)
                        continue
                    _give_up(sub, decision, failure, exc)
                else:
                    if outage.since is not None:
                        log.info(
                            "a dependency is back",
                            queue=sub.queue,
                            waited_s=round(outage.age(loop.time()), 3),
                        )
                    outage.passed()
                    return

    consume.__name__ = f"on_{sub.queue.replace('.', '_')}"
    return consume


def _give_up(
    sub: Subscription, decision: SetAside | DeadLetter, failure: Failure, exc: Exception
) -> NoReturn:
    """Set the message aside (nack, requeued) or dead-letter it (reject), logged."""
    detail = {
        "queue": sub.queue,
        "delivery": failure.deliveries + 1,
        "reason": decision.reason,
        "error": repr(exc)[:500],
    }
    if isinstance(decision, SetAside):
        EVENTS_CONSUMED.labels(queue=sub.queue, outcome="set_aside").inc()
        log.warning("setting a failed message aside", **detail)
        raise NackMessage(requeue=True) from exc
    DEAD_LETTERED.labels(queue=sub.queue).inc()
    log.error("dead-lettering a message that kept failing", **detail)
    raise RejectMessage() from exc


async def _the_message_itself(message: RabbitMessage) -> RabbitMessage:
    """The handler gets the message, not a decoded body (the broker has no FastDepends)."""
    return message


def _delivery_count(message: RabbitMessage) -> int:
    count = (message.headers or {}).get("x-delivery-count", 0)
    return count if isinstance(count, int) and count >= 0 else 0


async def _handle(
    sub: Subscription,
    message: RabbitMessage,
    observe: Callable[[RecordedEvent], None] | None = None,
) -> None:
    try:
        event = decode_message(message.body)
    except (MalformedEvent, UnknownEventType) as exc:
        EVENTS_CONSUMED.labels(queue=sub.queue, outcome="rejected").inc()
        DEAD_LETTERED.labels(queue=sub.queue).inc()
        log.error("rejecting malformed message", queue=sub.queue, reason=str(exc))
        raise RejectMessage() from exc
    if observe is not None:
        observe(event)
    with structlog.contextvars.bound_contextvars(
        correlation_id=event.correlation_id, event_id=event.id, event_type=event.type
    ):
        if sub.inbox is not None and await sub.inbox.seen(event.id):
            EVENTS_CONSUMED.labels(queue=sub.queue, outcome="duplicate").inc()
            return
        try:
            await sub.handler(event)
        except Exception as exc:
            EVENTS_CONSUMED.labels(queue=sub.queue, outcome="failed").inc()
            _log_failure(sub, exc)
            raise
        if sub.inbox is not None:
            await sub.inbox.done(event.id)
        EVENTS_CONSUMED.labels(queue=sub.queue, outcome="applied").inc()


async def _handle_raw(sub: Subscription, handler: MessageHandler, message: RabbitMessage) -> None:
    try:
        await handler(message)
    except RejectMessage:
        EVENTS_CONSUMED.labels(queue=sub.queue, outcome="rejected").inc()
        DEAD_LETTERED.labels(queue=sub.queue).inc()
        raise
    except Exception as exc:
        EVENTS_CONSUMED.labels(queue=sub.queue, outcome="failed").inc()
        _log_failure(sub, exc)
        raise
    EVENTS_CONSUMED.labels(queue=sub.queue, outcome="applied").inc()


def _log_failure(sub: Subscription, exc: Exception) -> None:
    if is_transient(exc):
        log.warning(
            "a dependency is away; the message waits", queue=sub.queue, error=repr(exc)[:300]
        )
    else:
        log.exception("handler failed", queue=sub.queue)
