"""Subscribing typed event handlers to durable, dead-lettered queues.

A handler receives a typed :class:`~peertrain.common.events.RecordedEvent`. Outcomes:

* it returns: the message is acknowledged (after the inbox recorded the event);
* the event was already processed: acknowledged, no second effect;
* the body is not a valid event: rejected at once, so it lands in ``<queue>.dlq``;
* the handler raises: negatively acknowledged and requeued; after the queue's
  delivery limit RabbitMQ dead-letters it, and the messages behind it keep flowing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import structlog
from faststream.exceptions import RejectMessage
from faststream.middlewares import AckPolicy
from faststream.rabbit import Channel, RabbitBroker, RabbitExchange, RabbitMessage

from peertrain.common.events import MalformedEvent, RecordedEvent, UnknownEventType, decode_message
from peertrain.common.metrics import DEAD_LETTERED, EVENTS_CONSUMED

from .inbox import Inbox
from .topology import EVENTS, declare_queue, quorum_queue

__all__ = ["EventHandler", "Subscription", "Subscriptions"]

log = structlog.get_logger(__name__)

EventHandler = Callable[[RecordedEvent], Awaitable[None]]
MessageHandler = Callable[[RabbitMessage], Awaitable[None]]


@dataclass(frozen=True)
class Subscription:
    """One queue, the event types bound to it, and its handler."""

    queue: str
    routing_keys: tuple[str, ...]
    handler: EventHandler
    inbox: Inbox | None
    exchange: RabbitExchange = EVENTS
    prefetch: int = 1
    channel: Channel = field(default_factory=Channel)
    raw: MessageHandler | None = None
    """Set for non-event messages (peer telemetry): gets the message itself."""


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
    items: list[Subscription] = field(default_factory=list)

    def add(
        self,
        queue: str,
        routing_keys: Sequence[str],
        handler: EventHandler,
        *,
        inbox: Inbox | None = None,
        exchange: RabbitExchange = EVENTS,
        prefetch: int = 1,
    ) -> Subscription:
        """Register ``handler`` for the event types ``routing_keys`` on ``queue``.

        ``prefetch`` 1 (the default) handles the queue's messages strictly one after the
        other, in queue order, which keeps each stream's events in order. The client
        runs every delivery in its own task, so a larger prefetch means concurrent,
        unordered handling: only for handlers that do not care about order.
        """
        channel = Channel(prefetch_count=prefetch)
        sub = Subscription(queue, tuple(routing_keys), handler, inbox, exchange, prefetch, channel)
        self.items.append(sub)
        return sub

    def add_messages(
        self,
        queue: str,
        routing_keys: Sequence[str],
        handler: MessageHandler,
        *,
        exchange: RabbitExchange,
        prefetch: int = 1,
    ) -> Subscription:
        """Register ``handler`` for raw messages (not events), e.g. peer telemetry.

        The same outcomes as for events: return -> ack; raise ``RejectMessage`` ->
        dead-lettered at once; raise anything else -> requeued up to the delivery limit.
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
            )

    def attach(self, broker: RabbitBroker) -> None:
        """Create the FastStream subscribers (call before ``broker.start()``)."""
        for sub in self.items:
            broker.subscriber(
                quorum_queue(sub.queue, delivery_limit=self.delivery_limit),
                channel=sub.channel,
                ack_policy=AckPolicy.NACK_ON_ERROR,
                title=sub.queue,
            )(_consumer(sub))


def _consumer(sub: Subscription) -> Callable[[RabbitMessage], Awaitable[None]]:
    async def consume(message: RabbitMessage) -> None:
        if sub.raw is not None:
            await _handle_raw(sub, sub.raw, message)
        else:
            await _handle(sub, message)

    consume.__name__ = f"on_{sub.queue.replace('.', '_')}"
    return consume


async def _handle(sub: Subscription, message: RabbitMessage) -> None:
    try:
        event = decode_message(message.body)
    except (MalformedEvent, UnknownEventType) as exc:
        EVENTS_CONSUMED.labels(queue=sub.queue, outcome="rejected").inc()
        DEAD_LETTERED.labels(queue=sub.queue).inc()
        log.error("rejecting malformed message", queue=sub.queue, reason=str(exc))
        raise RejectMessage() from exc
    with structlog.contextvars.bound_contextvars(
        correlation_id=event.correlation_id, event_id=event.id, event_type=event.type
    ):
        if sub.inbox is not None and not await sub.inbox.begin(event.id):
            EVENTS_CONSUMED.labels(queue=sub.queue, outcome="duplicate").inc()
            return
        try:
            await sub.handler(event)
        except Exception:
            EVENTS_CONSUMED.labels(queue=sub.queue, outcome="failed").inc()
            log.exception("event handler failed; the message will be retried", queue=sub.queue)
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
    except Exception:
        EVENTS_CONSUMED.labels(queue=sub.queue, outcome="failed").inc()
        log.exception("message handler failed; the message will be retried", queue=sub.queue)
        raise
    EVENTS_CONSUMED.labels(queue=sub.queue, outcome="applied").inc()
