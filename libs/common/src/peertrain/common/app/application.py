"""One application object per service, and its subscriptions as data.

A service's application is transport-free: it holds its ports (:class:`Ports`: the
event log, the blob store, leases, the clock, a publisher to peers) and its working
memory, and offers ``on_event(event)``, ``on_peer(message)``, ``tick()`` and its
commands. What it listens to is declared once, as data (:data:`Table`: rows of
:class:`On`), and bound by whoever drives it:

* the platform (:func:`subscribe`): one RabbitMQ queue per row, peer messages verified
  on the way in (:func:`~peertrain.common.security.peer_message_handler`);
* the simulation and unit tests (:func:`deliver`): each event appended to an in-memory
  log is handed, in log order, to the methods whose rows name its type.

So the simulation cannot drift from the platform: both call the same methods for the
same events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from peertrain.common.blobs import BlobPort
from peertrain.common.clock import SYSTEM_CLOCK, Clock
from peertrain.common.eventlog import LogPort
from peertrain.common.events import RecordedEvent

if TYPE_CHECKING:
    from faststream.rabbit import RabbitBroker

    from peertrain.common.leases import Holding

    from .context import ServiceContext

__all__ = [
    "BrokerPublisher",
    "MemoryPublisher",
    "On",
    "Ports",
    "Published",
    "Publisher",
    "Table",
    "deliver",
    "handlers",
    "subscribe",
]


class Publisher(Protocol):
    """Sends a message to an exchange (tasks and cancellations to peers)."""

    async def publish(
        self, body: str, *, exchange: str, routing_key: str, message_id: str
    ) -> None: ...


class BrokerPublisher:
    """The platform's publisher: persistent, mandatory JSON messages on RabbitMQ."""

    def __init__(self, broker: RabbitBroker, *, timeout_s: float = 30.0) -> None:
        self.broker = broker
        self.timeout_s = timeout_s

    async def publish(self, body: str, *, exchange: str, routing_key: str, message_id: str) -> None:
        """Publish and wait for the broker's confirm (unroutable raises)."""
        await self.broker.publish(
            body,
            exchange=exchange,
            routing_key=routing_key,
            persist=True,
            mandatory=True,
            message_id=message_id,
            content_type="application/json",
            timeout=self.timeout_s,
        )


@dataclass(frozen=True)
class Published:
    """One message a :class:`MemoryPublisher` was given."""

    body: str
    exchange: str
    routing_key: str
    message_id: str


@dataclass
class MemoryPublisher:
    """Keeps what is published, in order (the simulation's peers and unit tests read it)."""

    sent: list[Published] = field(default_factory=list)

    async def publish(self, body: str, *, exchange: str, routing_key: str, message_id: str) -> None:
        """Record the message."""
        self.sent.append(Published(body, exchange, routing_key, message_id))


@dataclass(frozen=True)
class Ports:
    """What an application reaches outside itself through (the platform's adapters, or
    the in-memory ones of :mod:`peertrain.common.memory`-style tests and the simulation).
    """

    log: LogPort
    blobs: BlobPort | None = None
    clock: Clock = SYSTEM_CLOCK
    publisher: Publisher | None = None
    leases: Holding | None = None


@dataclass(frozen=True)
class On:
    """One subscription, as data: a queue, what it hears, and the method that gets it.

    Attributes
    ----------
    queue
        The purpose, under the service's queue prefix (``settings.queue(queue)``).
    types
        Event types (routing keys on the events exchange); with ``peers``, the peer
        message kinds instead (``peer.<id>.<kind>`` on the telemetry exchange).
    method
        The application's coroutine method: given a
        :class:`~peertrain.common.events.RecordedEvent`, or with ``peers`` a verified
        :class:`~peertrain.common.security.PeerMessage`.
    peers
        Peer message kind -> its body's model, for a queue of peers' messages.
    per_instance
        Every instance hears everything: the queue is ``<queue>.<instance>``, deleted
        ``feed_expires_s`` after its instance is gone, its dead letters on a DLQ all the
        instances share.
    inbox
        Each event handled once, even when delivered again (an inbox in the service's
        database).
    ordered
        Deliveries handled one after the other, in queue order (the default); a queue of
        peers' messages may have them handled as they come instead, for a method that
        waits to handle several together.
    """

    queue: str
    types: tuple[str, ...]
    method: str
    peers: Mapping[str, type[BaseModel]] | None = None
    per_instance: bool = False
    inbox: bool = False
    ordered: bool = True


Table = Sequence[On]
"""A service's subscriptions."""


def handlers(table: Table, app: object, event_type: str) -> list[Callable[[Any], Awaitable[None]]]:
    """The application's methods that hear events of ``event_type`` (in table order)."""
    return [
        getattr(app, row.method) for row in table if row.peers is None and event_type in row.types
    ]


async def deliver(table: Table, app: object, event: RecordedEvent) -> int:
    """Hand ``event`` to every method of ``app`` its table binds to its type, as the
    platform's queues would; how many heard it."""
    found = handlers(table, app, event.type)
    for handle in found:
        await handle(event)
    return len(found)


class _QueueSettings(Protocol):
    def queue(self, purpose: str) -> str: ...


def subscribe(ctx: ServiceContext, app: object, table: Table, settings: _QueueSettings) -> None:
    """Bind ``table`` to RabbitMQ queues on the service's context (declared and started
    with the rest of its subscriptions)."""
    from peertrain.common.bus import TELEMETRY, Inbox, dlq_name
    from peertrain.common.security import peer_message_handler

    for row in table:
        handler = getattr(app, row.method)
        if row.peers is not None:
            queue = settings.queue(row.queue)
            ctx.subscriptions.add_messages(
                queue,
                [f"peer.*.{kind}" for kind in row.types],
                peer_message_handler(ctx, row.peers, handler, queue=queue),
                exchange=TELEMETRY,
                ordered=row.ordered,
            )
        elif row.per_instance:
            instance: str = getattr(settings, "instance_name")  # noqa: B009 - LeaseSettings
            expires_s: int = getattr(settings, "feed_expires_s")  # noqa: B009
            ctx.subscriptions.add(
                settings.queue(f"{row.queue}.{instance}"),
                row.types,
                handler,
                expires_s=expires_s,
                dead_letters=dlq_name(settings.queue(row.queue)),  # outlives every instance
            )
        else:
            queue = settings.queue(row.queue)
            inbox = Inbox(ctx.db, queue) if row.inbox else None
            ctx.subscriptions.add(queue, row.types, handler, inbox=inbox)
