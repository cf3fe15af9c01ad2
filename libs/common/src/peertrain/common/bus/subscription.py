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

One concern a piece, composed in :meth:`Subscriptions.attach`: decoding
(:mod:`.decoding`, a FastStream decoder), in-order handling (:mod:`.ordering`),
retry, set-aside and dead-lettering (:mod:`.retry`, by the rules of :mod:`.failures`,
the outage budget included), the inbox (:mod:`.inbox`) and the counted, logged handler
(:mod:`.handling`). Ordering and retry are FastStream middlewares; FastStream 0.7 takes
middlewares per broker or router, not per subscriber, so each subscription gets a router
of its own carrying its own line and outage state.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from faststream.middlewares import AckPolicy
from faststream.rabbit import Channel, RabbitBroker, RabbitExchange, RabbitMessage, RabbitRouter

from peertrain.common.events import RecordedEvent

from .decoding import event_decoder, the_message_itself
from .failures import OUTAGE_BUDGET_S, RETRY_OUTAGE_MAX_S, Outage
from .handling import EventHandler, MessageHandler, handle_events, handle_messages
from .inbox import Inbox
from .ordering import InOrder, InOrderMiddleware
from .retry import RetryMiddleware
from .topology import EVENTS, declare_queue, dlq_name, quorum_queue

__all__ = [
    "OUTAGE_BUDGET_S",
    "PIPELINE",
    "RETRY_OUTAGE_MAX_S",
    "EventHandler",
    "MessageHandler",
    "Subscription",
    "Subscriptions",
]

PIPELINE = 32
"""Messages prefetched per subscription (handled one after the other, in order)."""


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
    ordered: bool = True
    """Deliveries handled one after the other, in queue order; when not, each runs as
    it comes (up to ``prefetch`` at once): for handlers that wait to handle messages
    together (peers' reports, batched into one append)."""


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
        ordered: bool = True,
    ) -> Subscription:
        """Register ``handler`` for raw messages (not events), e.g. peer telemetry.

        The same outcomes as for events: return -> ack; raise ``RejectMessage`` ->
        dead-lettered at once; raise anything else -> set aside (see the module docstring).
        Not ``ordered``, up to ``prefetch`` deliveries are in the handler at once (each
        acknowledged when its own handler returns).
        """

        async def never(_: RecordedEvent) -> None:  # pragma: no cover - raw subscriptions
            raise RuntimeError("raw subscription")

        channel = Channel(prefetch_count=prefetch)
        sub = Subscription(
            queue,
            tuple(routing_keys),
            never,
            None,
            exchange,
            prefetch,
            channel,
            raw=handler,
            ordered=ordered,
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
        """Create the FastStream subscribers (call before ``broker.start()``).

        Each gets its own router carrying its middlewares, outermost first: its turn in
        line (:class:`~.ordering.InOrderMiddleware`; none for a subscription that is not
        ``ordered``), then retry or give-up
        (:class:`~.retry.RetryMiddleware`); inside them the decoder and the handler.
        The acknowledgement (``NACK_ON_ERROR``) comes after, outside them all.
        """
        for sub in self.items:
            retry = partial(
                RetryMiddleware,
                queue=sub.queue,
                delivery_limit=self.delivery_limit,
                outage=Outage(),
            )
            in_order = partial(InOrderMiddleware, order=InOrder())
            router = RabbitRouter(middlewares=(in_order, retry) if sub.ordered else (retry,))
            handler: Callable[[Any], Awaitable[None]]
            decoder: Callable[[RabbitMessage], Awaitable[Any]]
            if sub.raw is not None:
                handler, decoder = handle_messages(sub.queue, sub.raw), the_message_itself
            else:
                handler = handle_events(sub.queue, sub.handler, sub.inbox, self.observe)
                decoder = event_decoder(sub.queue)
            handler.__name__ = f"on_{sub.queue.replace('.', '_')}"
            router.subscriber(
                quorum_queue(
                    sub.queue,
                    delivery_limit=self.delivery_limit,
                    expires_s=sub.expires_s,
                    dead_letters=sub.dead_letters,
                ),
                channel=sub.channel,
                ack_policy=AckPolicy.NACK_ON_ERROR,
                title=sub.queue,
                decoder=decoder,
            )(handler)
            broker.include_router(router)
