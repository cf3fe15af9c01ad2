"""Exchanges and queues: names, and declarations with dead-lettering.

Every consuming queue is a durable quorum queue with a delivery limit whose dead
letters go through the ``peertrain.dlx`` exchange to ``<queue>.dlq``. So a poison
message is retried a bounded number of times, then parked where an operator can see it.
"""

from __future__ import annotations

from collections.abc import Sequence

import aio_pika
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

log = structlog.get_logger(__name__)

__all__ = [
    "DLX",
    "EVENTS",
    "PEERS",
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


def dlq_name(queue: str) -> str:
    """Name of the dead-letter queue of ``queue``."""
    return f"{queue}.dlq"


def quorum_queue(
    name: str, *, delivery_limit: int = 5, expires_s: int | None = None
) -> RabbitQueue:
    """A durable quorum queue that dead-letters to ``<name>.dlq`` after ``delivery_limit``;
    with ``expires_s``, deleted once that long without a consumer (one instance's queue)."""
    arguments: QuorumQueueArgs = {
        "x-delivery-limit": delivery_limit,
        "x-dead-letter-exchange": DLX.name,
        "x-dead-letter-routing-key": dlq_name(name),
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
    expiry: QuorumQueueArgs = {} if expires_s is None else {"x-expires": expires_s * 1000}
    dlq = await broker.declare_queue(
        RabbitQueue(dlq_name(name), queue_type=QueueType.QUORUM, durable=True, arguments=expiry)
    )
    await dlq.bind(DLX.name, routing_key=dlq_name(name))
    queue = quorum_queue(name, delivery_limit=delivery_limit, expires_s=expires_s)
    declared = await broker.config.declarer.declare_queue(queue, channel=channel)
    for key in routing_keys:
        await declared.bind(exchange.name, routing_key=key)
    return queue


async def retire_queues(amqp_url: str, names: Sequence[str]) -> None:
    """Delete queues (and their DLQs) that an earlier version declared and this one no
    longer reads, so they do not fill up forever. What they held is in the log, which the
    service reads at start-up. Deleting a queue that is not there is no error."""
    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel()
        for name in names:
            for queue in (name, dlq_name(name)):
                result = await channel.queue_delete(queue)
                if result.message_count:
                    log.info("retired a queue", queue=queue, messages=result.message_count)
    finally:
        await connection.close()
