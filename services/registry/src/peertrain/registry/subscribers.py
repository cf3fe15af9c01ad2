"""The registry's telemetry consumer: ``<ns>.heartbeats`` and ``<ns>.presence`` on
``peertrain.telemetry``, handed to :meth:`RegistryApp.on_heartbeat` and
:meth:`RegistryApp.on_peer` (its events, ``peer.*`` and ``user.disabled``, are bound
as data: :data:`~peertrain.registry.application.REGISTRY_SUBSCRIPTIONS`).

The connection is the services' one AMQP client: a FastStream ``RabbitBroker``
(:func:`~peertrain.common.bus.make_broker`), whose aio-pika connection runs on
``aiormq``. Both queues are consumed on the ``aiormq`` channel under one of its aio-pika
channels (``basic_consume``: one task per delivery, no framework layers), so a heartbeat
costs what it cost on a raw ``aiormq`` connection. Not through a FastStream subscriber
(its consume path alone costs about 100 us a message, measured on this machine, against
about 8 us here), nor through aio-pika's consumer (it wraps every delivery in a message
object and a second task: about 30 us more a message, and in ``make bench-heartbeats``
on a busy 2-core machine its drain rate was 4,592/s against 10,140/s for this path, and
its steady rate 3,284/s against 4,392/s): at 5,000 heartbeats a second on 2 cores shared
with RabbitMQ and MongoDB, the per-message cost is the budget.

Heartbeats come from a classic queue, with a large prefetch and acknowledgements batched
(``multiple=True``): ordering does not matter, and the effect is in memory. The
heartbeat queue has a message TTL: after an outage, heartbeats older than that are old
news. Announce and leaving messages are few and have effects in the log: they go
through a dead-lettered quorum queue and are acknowledged one by one after their
effect; only a failure to record (the database away) is retried, and dead-lettered
after the delivery limit.

The connection is supervised here, not by aio-pika's robust reconnection (which would
bring the channels back without these consumers): after any loss, and after the broker
cancels a consumer (its queue deleted or lost), the broker is stopped and another
connected, with backoff. While it is down, liveness is paused (a blind registry must
not declare every peer offline), then resumes with a grace for the peers to reconnect
too (see :mod:`peertrain.registry.domain.liveness`). A registry that is merely behind
(a flood of junk ahead of honest heartbeats in the FIFO queue) must not either: before
it declares anyone offline, it sends a marker of its own through the heartbeat queue
(the default exchange, where peers may not publish) and judges once the marker is back,
that is once every heartbeat queued before it has been consumed
(:meth:`TelemetryConsumer.caught_up`).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from typing import Any

import aiormq
import structlog
from aiormq.abc import DeliveredMessage
from faststream.rabbit import Channel, RabbitBroker

from peertrain.common.bus import DLX, TELEMETRY, dlq_name, make_broker
from peertrain.common.events.peers import ANNOUNCE, HEARTBEAT, LEAVING, telemetry_key
from peertrain.common.periodic import Background

from .application import RegistryApp
from .metrics import TELEMETRY_CONNECTED
from .usecases.telemetry import TelemetryMessage

__all__ = ["TelemetryConsumer"]

log = structlog.get_logger(__name__)


def _consuming(channel: aiormq.abc.AbstractChannel) -> bool:
    """Whether the channel still has its consumer (aiormq's ``Channel.consumers``, which
    drops a consumer the broker cancelled; the abstract channel does not declare it)."""
    consumers = getattr(channel, "consumers", None)
    return consumers is None or bool(consumers)


async def _raw_channel(broker: RabbitBroker, prefetch: int) -> aiormq.abc.AbstractChannel:
    """A new channel of ``broker``'s connection with ``prefetch``, as the ``aiormq``
    channel under aio-pika's (to consume from it with no layer above the protocol)."""
    channel = await broker.config.channel_manager.get_channel(
        Channel(prefetch_count=prefetch, publisher_confirms=False)
    )
    underlay: aiormq.abc.AbstractChannel = await channel.get_underlay_channel()
    return underlay


def _telemetry(message: DeliveredMessage) -> TelemetryMessage:
    return TelemetryMessage(message.routing_key, message.header.properties.headers, message.body)


def _tag(message: DeliveredMessage) -> int:
    return int(getattr(message.delivery, "delivery_tag", 0) or 0)


class _Acks:
    """Batched acknowledgements of one heartbeat channel."""

    def __init__(self, channel: aiormq.abc.AbstractChannel, every: int) -> None:
        self.channel = channel
        self.every = every
        self.last = 0
        self.pending = 0

    async def done(self, tag: int) -> None:
        self.last = max(self.last, tag)
        self.pending += 1
        if self.pending >= self.every:
            await self.flush()

    async def flush(self) -> None:
        if self.pending and not self.channel.is_closed:
            self.pending = 0
            await self.channel.basic_ack(self.last, multiple=True, wait=False)


class TelemetryConsumer:
    """Consume telemetry into ``app`` over a supervised connection."""

    def __init__(self, app: RegistryApp) -> None:
        self.settings = app.settings
        self.presence = app.presence
        self.app = app
        self.heartbeat_queue = self.settings.queue("heartbeats")
        self.presence_queue = self.settings.queue("presence")
        self.connected = asyncio.Event()
        self._loop = Background("registry-telemetry", self._supervise)
        self._acks: _Acks | None = None
        self._markers: dict[bytes, asyncio.Future[None]] = {}
        self.presence.judge_after(self.caught_up)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Consume in the background, reconnecting forever."""
        if not self._loop.running:
            self.presence.blind()
            self._loop.start()

    async def stop(self) -> None:
        """Stop consuming."""
        await self._loop.stop()

    async def _supervise(self) -> None:
        delay = 0.2
        url = self.settings.amqp_url.get_secret_value()
        while True:
            broker: RabbitBroker | None = None
            try:
                broker = make_broker(url, app_id=self.settings.service_name)
                await asyncio.wait_for(broker.connect(), 10)
                channels = await self._consume(broker)
                self.presence.seeing()
                self.connected.set()
                TELEMETRY_CONNECTED.set(1)
                log.info("consuming telemetry", queues=[self.heartbeat_queue, self.presence_queue])
                delay = 0.2
                await self._until_closed(channels)
                log.warning("telemetry connection lost; liveness paused until it is back")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("telemetry connection failed", error=repr(exc), retry_in_s=delay)
            finally:
                self.connected.clear()
                TELEMETRY_CONNECTED.set(0)
                self.presence.blind()
                if broker is not None:  # also ends aio-pika's own reconnecting: ours does it
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(broker.stop(), 2)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.settings.reconnect_max_s)

    async def _until_closed(self, channels: list[aiormq.abc.AbstractChannel]) -> None:
        connection = channels[0].connection
        closings: list[asyncio.Future[Any]] = [connection.closing, *(c.closing for c in channels)]
        flusher = asyncio.create_task(self._flush_acks_forever())
        cancelled = asyncio.create_task(self._until_a_consumer_is_cancelled(channels))
        try:
            await asyncio.wait([*closings, cancelled], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (flusher, cancelled):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            for closing in closings:  # retrieve exceptions so none is "never retrieved"
                if closing.done() and not closing.cancelled():
                    closing.exception()

    @staticmethod
    async def _until_a_consumer_is_cancelled(channels: list[aiormq.abc.AbstractChannel]) -> None:
        """Return once the broker cancelled a consumer (its queue deleted, or lost with a
        node): the channel stays open, but nothing is heard on it any more, so the
        registry is blind and must reconnect (which declares the queue again)."""
        while True:
            await asyncio.sleep(0.5)
            if not all(_consuming(channel) for channel in channels):
                break
        log.warning("the broker cancelled a telemetry consumer")

    async def _flush_acks_forever(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            if self._acks is not None:
                with contextlib.suppress(Exception):
                    await self._acks.flush()

    async def caught_up(self) -> None:
        """Return once every heartbeat queued before the call has been consumed.

        A marker published now into the heartbeat queue comes out after all of them
        (the queue is FIFO, and the handling of a heartbeat up to its effect does not
        wait on anything once its token is known). A marker lost with its connection,
        or expired behind a backlog longer than the queue's TTL, is sent again: until
        one comes back, nobody is declared offline.
        """
        while True:
            await self.connected.wait()
            acks = self._acks
            if acks is None or acks.channel.is_closed:
                await asyncio.sleep(0.1)
                continue
            token = secrets.token_hex(16).encode()
            back = self._markers[token] = asyncio.get_running_loop().create_future()
            try:
                await acks.channel.basic_publish(
                    token, exchange="", routing_key=self.heartbeat_queue
                )
                await asyncio.wait_for(back, self.settings.heartbeat_ttl_s + 5.0)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # timed out, or the channel went: the sweeper waits on
                log.warning("heartbeat queue marker lost; sending another", error=repr(exc))
                await asyncio.sleep(0.1)
            finally:
                self._markers.pop(token, None)

    # -- topology ---------------------------------------------------------------------------

    async def _consume(self, broker: RabbitBroker) -> list[aiormq.abc.AbstractChannel]:
        s = self.settings
        heartbeats = await _raw_channel(broker, s.heartbeat_prefetch)
        await heartbeats.exchange_declare(TELEMETRY.name, exchange_type="topic", durable=True)
        await heartbeats.queue_declare(
            self.heartbeat_queue,
            durable=True,
            arguments={
                "x-queue-type": "classic",
                "x-message-ttl": int(s.heartbeat_ttl_s * 1000),
                "x-max-length": 1_000_000,
                "x-overflow": "drop-head",
            },
        )
        await heartbeats.queue_bind(
            self.heartbeat_queue, TELEMETRY.name, routing_key=telemetry_key("*", HEARTBEAT)
        )
        self._acks = _Acks(heartbeats, s.heartbeat_ack_every)
        await heartbeats.basic_consume(self.heartbeat_queue, self._on_heartbeat)

        presence = await _raw_channel(broker, s.presence_prefetch)
        await presence.exchange_declare(DLX.name, exchange_type="direct", durable=True)
        dlq = dlq_name(self.presence_queue)
        await presence.queue_declare(dlq, durable=True, arguments={"x-queue-type": "quorum"})
        await presence.queue_bind(dlq, DLX.name, routing_key=dlq)
        await presence.queue_declare(
            self.presence_queue,
            durable=True,
            arguments={
                "x-queue-type": "quorum",
                "x-delivery-limit": s.delivery_limit,
                "x-dead-letter-exchange": DLX.name,
                "x-dead-letter-routing-key": dlq,
            },
        )
        for kind in (ANNOUNCE, LEAVING):
            await presence.queue_bind(
                self.presence_queue, TELEMETRY.name, routing_key=telemetry_key("*", kind)
            )
        await presence.basic_consume(self.presence_queue, self._on_presence)
        return [heartbeats, presence]

    # -- delivery ---------------------------------------------------------------------------

    async def _on_heartbeat(self, message: DeliveredMessage) -> None:
        if message.exchange == "":  # one of caught_up's markers (a stale one: ignored)
            back = self._markers.get(message.body)
            if back is not None and not back.done():
                back.set_result(None)
        else:
            await self.app.on_heartbeat(_telemetry(message))
        acks = self._acks
        if acks is not None and acks.channel is message.channel:
            await acks.done(_tag(message))

    async def _on_presence(self, message: DeliveredMessage) -> None:
        channel = message.channel
        tag = _tag(message)
        try:
            await self.app.on_peer(_telemetry(message))
        except Exception as exc:
            log.warning(
                "telemetry handling failed; it will be retried",
                routing_key=message.routing_key,
                error=repr(exc),
            )
            await asyncio.sleep(1.0)
            await channel.basic_nack(tag, requeue=True)
        else:
            await channel.basic_ack(tag)
