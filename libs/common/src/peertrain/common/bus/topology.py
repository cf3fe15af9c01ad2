"""Exchanges and queues: names, and declarations with dead-lettering.

Every consuming queue is a durable quorum queue with a delivery limit whose dead
letters go through the ``peertrain.dlx`` exchange to ``<queue>.dlq``. So a poison
message is retried a bounded number of times, then parked where an operator can see it.
Dead-letter queues never expire: one instance's own queue (``<base>.<instance>``, which
the broker deletes once its instance is gone) dead-letters into its service's shared
``<base>.dlq``, which outlives every instance (``make redrive`` sends what it holds back
by each message's own exchange and routing key, to whichever instances run then).

Bounds. Every queue is bounded in messages and bytes by broker *policies*, not queue
arguments: RabbitMQ refuses to declare an existing queue again with other arguments,
so arguments would bound only queues created after the change, and every running
deployment would fail its next declaration; a policy applies to queues old and new at
once, and an operator can tune it without a release. The local stack sets them
(``deploy/local/rabbitmq.sh``, :data:`QUEUE_POLICIES` is what it sets; the compose file
the same), and a stack test checks them on the real queues. The overflow behaviour
is chosen per kind of queue:

* events (``.*``): ``reject-publish``. A publisher (the outbox relay) is refused, keeps
  the event in its outbox and tries again: back-pressure, and no fact is lost.
* peer telemetry (``<service>.updates``, ``.peers``, ``.presence``, ``.heartbeats``):
  tighter bounds, ``reject-publish``: a flood is refused at the broker (a peer's
  publish is not confirmed) instead of raising its memory alarm, which would block every
  publisher; consumers also bound each peer's rate (:mod:`peertrain.common.bus.rate`).
* a peer's own queue (``peer.<id>``): ``drop-head``. Tasks for a peer that is away pile
  up there; the oldest are stale and go first, and the orchestrator is never refused.
* dead letters (``<queue>.dlq``): ``drop-head``, 10,000 messages: what is parked never
  grows the broker, and the newest evidence is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog
from faststream.rabbit import (
    Channel,
    ExchangeType,
    QueueType,
    RabbitBroker,
    RabbitExchange,
    RabbitQueue,
)
from faststream.rabbit.schemas.queue import QuorumQueueArgs

from .broker import broker_channel

log = structlog.get_logger(__name__)

__all__ = [
    "DLX",
    "EVENTS",
    "MAX_MESSAGE_BYTES",
    "PEERS",
    "QUEUE_POLICIES",
    "TELEMETRY",
    "declare_exchanges",
    "declare_queue",
    "dlq_name",
    "quorum_queue",
    "retire_queues",
]

EVENTS = RabbitExchange("peertrain.events", type=ExchangeType.TOPIC, durable=True)
PEERS = RabbitExchange("peertrain.peers", type=ExchangeType.TOPIC, durable=True)
TELEMETRY = RabbitExchange("peertrain.telemetry", type=ExchangeType.TOPIC, durable=True)
DLX = RabbitExchange("peertrain.dlx", type=ExchangeType.DIRECT, durable=True)


MAX_MESSAGE_BYTES = 8 * 1024 * 1024
"""The broker's ``max_message_size``: it closes the channel of a larger publish. The
largest event (a job's plan with a shard per peer) is far below it; peers' messages have
a much smaller bound of their own at the consumer
(:data:`peertrain.common.bus.rate.MAX_PEER_MESSAGE_BYTES`)."""

QUEUE_POLICIES: dict[str, dict[str, object]] = {
    "peertrain-queue-bound": {
        "pattern": ".*",
        "priority": 0,
        "definition": {
            "max-length": 1_000_000,
            "max-length-bytes": 1024**3,
            "overflow": "reject-publish",
        },
    },
    "peertrain-dlq-bound": {
        "pattern": r"\.dlq$",
        "priority": 1,
        "definition": {
            "max-length": 10_000,
            "max-length-bytes": 256 * 1024**2,
            "overflow": "drop-head",
        },
    },
    "peertrain-telemetry-bound": {
        "pattern": r"\.(updates|peers|presence|heartbeats)$",
        "priority": 2,
        "definition": {
            "max-length": 100_000,
            "max-length-bytes": 128 * 1024**2,
            "overflow": "reject-publish",
        },
    },
    "peertrain-peer-queue-bound": {
        "pattern": r"^peer\.[^.]+$",
        "priority": 2,
        "definition": {
            "max-length": 1_000,
            "max-length-bytes": 16 * 1024**2,
            "overflow": "drop-head",
        },
    },
}
"""The broker policies that bound every queue (name -> pattern, priority, definition):
RabbitMQ applies the one of highest priority whose pattern matches a queue's name."""


def dlq_name(queue: str) -> str:
    """Name of the dead-letter queue of ``queue``."""
    return f"{queue}.dlq"


def quorum_queue(
    name: str,
    *,
    delivery_limit: int = 5,
    expires_s: int | None = None,
    dead_letters: str | None = None,
) -> RabbitQueue:
    """A durable quorum queue that dead-letters to ``<name>.dlq`` after ``delivery_limit``;
    with ``expires_s``, deleted once that long without a consumer (one instance's queue),
    and then it dead-letters to ``dead_letters`` (a DLQ that outlives the instance)."""
    arguments: QuorumQueueArgs = {
        "x-delivery-limit": delivery_limit,
        "x-dead-letter-exchange": DLX.name,
        "x-dead-letter-routing-key": dead_letters or dlq_name(name),
    }
    if expires_s is not None:
        arguments["x-expires"] = expires_s * 1000
    return RabbitQueue(name, queue_type=QueueType.QUORUM, durable=True, arguments=arguments)


async def declare_exchanges(broker: RabbitBroker) -> None:
    """Declare PeerTrain's exchanges (idempotent)."""
    for exchange in (EVENTS, PEERS, TELEMETRY, DLX):
        await broker.declare_exchange(exchange)


async def declare_queue(
    broker: RabbitBroker,
    name: str,
    *,
    exchange: RabbitExchange = EVENTS,
    routing_keys: Sequence[str] = (),
    delivery_limit: int = 5,
    channel: Channel | None = None,
    expires_s: int | None = None,
    dead_letters: str | None = None,
) -> RabbitQueue:
    """Declare ``name`` (quorum, dead-lettered) and its DLQ, bound to ``routing_keys``.

    The DLQ is ``<name>.dlq``, or ``dead_letters`` (a shared one: an expiring queue's
    DLQ must outlive it). It never expires.

    Returns the :class:`RabbitQueue` to subscribe with. Bindings are durable, so they
    survive broker restarts; declaring again with the same arguments is a no-op.

    Pass the ``channel`` its subscriber will consume on: FastStream caches declared
    queue objects by queue, whatever the channel, and its subscriber reuses the cached
    object, so a queue first declared on the default channel would be consumed there
    (with the default channel's prefetch).
    """
    await declare_exchanges(broker)
    dlq_queue = dead_letters or dlq_name(name)
    dlq = await broker.declare_queue(
        RabbitQueue(dlq_queue, queue_type=QueueType.QUORUM, durable=True)
    )
    await dlq.bind(DLX.name, routing_key=dlq_queue)
    queue = quorum_queue(
        name, delivery_limit=delivery_limit, expires_s=expires_s, dead_letters=dead_letters
    )
    declared = await broker.config.declarer.declare_queue(queue, channel=channel)
    for key in routing_keys:
        await declared.bind(exchange.name, routing_key=key)
    return queue


async def retire_queues(amqp_url: str, names: Sequence[str], *, dead_letters: bool = True) -> None:
    """Delete queues (and their DLQs) that an earlier version declared and this one no
    longer reads, so they do not fill up forever. What they held is in the log, which the
    service reads at start-up. Deleting a queue that is not there is no error.

    ``dead_letters=False`` keeps each ``<name>.dlq``: it may now be the shared DLQ of the
    per-instance queues that replaced ``<name>`` (another instance may have declared it a
    moment ago).

    FastStream has no call to delete a queue: this uses the aio-pika channel of its
    connection (:func:`~.broker.broker_channel`)."""
    async with broker_channel(amqp_url) as channel:  # FastStream has no queue.delete
        for name in names:
            for queue in (name, dlq_name(name)) if dead_letters else (name,):
                result = await channel.queue_delete(queue)
                if result.message_count:
                    log.info("retired a queue", queue=queue, messages=result.message_count)
