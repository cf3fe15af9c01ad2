"""Exchanges and queues: names, and declarations with dead-lettering.

Every consuming queue is a durable quorum queue with a delivery limit whose dead
letters go through the ``peertrain.dlx`` exchange to ``<queue>.dlq``. So a poison
message is retried a bounded number of times, then parked where an operator can see it.
"""

from __future__ import annotations

from collections.abc import Sequence

from faststream.rabbit import (
    Channel,
    ExchangeType,
    QueueType,
    RabbitBroker,
    RabbitExchange,
    RabbitQueue,
)

__all__ = [
    "DLX",
    "EVENTS",
    "PEERS",
    "TELEMETRY",
    "declare_exchanges",
    "declare_queue",
    "dlq_name",
    "quorum_queue",
]

EVENTS = RabbitExchange("peertrain.events", type=ExchangeType.TOPIC, durable=True)
PEERS = RabbitExchange("peertrain.peers", type=ExchangeType.TOPIC, durable=True)
TELEMETRY = RabbitExchange("peertrain.telemetry", type=ExchangeType.TOPIC, durable=True)
DLX = RabbitExchange("peertrain.dlx", type=ExchangeType.DIRECT, durable=True)


def dlq_name(queue: str) -> str:
    """Name of the dead-letter queue of ``queue``."""
    return f"{queue}.dlq"


def quorum_queue(name: str, *, delivery_limit: int = 5) -> RabbitQueue:
    """A durable quorum queue that dead-letters to ``<name>.dlq`` after ``delivery_limit``."""
    return RabbitQueue(
        name,
        queue_type=QueueType.QUORUM,
        durable=True,
        arguments={
            "x-delivery-limit": delivery_limit,
            "x-dead-letter-exchange": DLX.name,
            "x-dead-letter-routing-key": dlq_name(name),
        },
    )


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
) -> RabbitQueue:
    """Declare ``name`` (quorum, dead-lettered) and its DLQ, bound to ``routing_keys``.

    Returns the :class:`RabbitQueue` to subscribe with. Bindings are durable, so they
    survive broker restarts; declaring again with the same arguments is a no-op.

    Pass the ``channel`` its subscriber will consume on: FastStream caches declared
    queue objects by queue, whatever the channel, and its subscriber reuses the cached
    object, so a queue first declared on the default channel would be consumed there
    (with the default channel's prefetch).
    """
    await declare_exchanges(broker)
    dlq = await broker.declare_queue(
        RabbitQueue(dlq_name(name), queue_type=QueueType.QUORUM, durable=True)
    )
    await dlq.bind(DLX.name, routing_key=dlq_name(name))
    queue = quorum_queue(name, delivery_limit=delivery_limit)
    declared = await broker.config.declarer.declare_queue(queue, channel=channel)
    for key in routing_keys:
        await declared.bind(exchange.name, routing_key=key)
    return queue
