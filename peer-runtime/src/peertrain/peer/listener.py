"""The listener: one asyncio loop that stays connected, heartbeats and takes work.

It connects to RabbitMQ with the peer's *own* user (it may only publish telemetry
under ``peer.<id>.*`` and consume ``peer.<id>``), announces the device specs, then
heartbeats every interval, each message carrying the current access token. Messages on
its queue are acknowledged as soon as they are accepted and handed to the worker.

What the worker thread reports (task ``accepted``, ``progress``, ``failed``, ``update``)
goes through :meth:`Listener.send` into an :class:`~peertrain.peer.outbox.Outbox`; a
sender task in each session publishes it persistent, with publisher confirms, and drops
a message only once confirmed, so nothing is lost across reconnects and order is kept.

The client is FastStream's :class:`~faststream.rabbit.RabbitBroker`, as in the services
(one AMQP client): one broker per session, its default channel (prefetch 1, publisher
confirms) both consuming the peer's queue and publishing telemetry. Neither the queue
nor the exchange is declared (the peer may not): both are looked up passively. The
handler gets the client's message itself (acknowledged by hand, at once).

Any loss (broker restart, network) ends the session (the broker's own reconnecting is
cut short: the session stops it); the listener reconnects with
jittered backoff by itself, at most ~2 s apart during the first minute of an outage
(see :class:`~peertrain.peer.backoff.Backoff`). The worker thread is not told: a task
in training goes on, and its ``update`` waits in the outbox for the next session. A
refused login to the broker means the credentials are stale (the registry issues a new
password on every request): it asks for new ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aio_pika
import aiormq
import structlog
from aio_pika.abc import AbstractIncomingMessage
from aiormq.abc import FieldValue
from faststream.middlewares import AckPolicy
from faststream.rabbit import Channel, RabbitBroker, RabbitExchange, RabbitMessage, RabbitQueue
from pydantic import BaseModel

from peertrain.common.events.peers import (
    ANNOUNCE,
    HEARTBEAT,
    LEAVING,
    Announce,
    DeviceSpecs,
    Heartbeat,
    Leaving,
    telemetry_key,
)
from peertrain.common.security import peer_headers

from .api import ApiError, PeerApi
from .backoff import Backoff
from .files import BROKER_FILE, read_model, remove, write_json
from .identity import BrokerAccess, Identity
from .outbox import Outbox, Outgoing
from .status import StatusReporter
from .tokens import TokenManager
from .worker import Worker, WorkItem

__all__ = ["Listener"]

log = structlog.get_logger(__name__)


def _refused(exc: BaseException) -> bool:
    return isinstance(
        exc,
        aiormq.exceptions.AuthenticationError
        | aiormq.exceptions.ProbableAuthenticationError
        | aiormq.exceptions.ChannelAccessRefused,
    ) or "ACCESS_REFUSED" in str(exc)


@dataclass(frozen=True)
class _Telemetry:
    """Where a session publishes: its broker and the telemetry exchange."""

    broker: RabbitBroker
    exchange: RabbitExchange

    async def publish(self, body: bytes, routing_key: str, **options: Any) -> None:
        await self.broker.publish(body, exchange=self.exchange, routing_key=routing_key, **options)


async def _incoming(message: RabbitMessage) -> AbstractIncomingMessage:
    """The handler gets the client's message itself (its routing key, its id)."""
    return message.raw_message


class Listener:
    """Keeps the peer present on the platform until ``stop`` is set.

    Parameters
    ----------
    identity
        Who the peer is.
    api
        The platform's HTTP API (broker credentials).
    tokens
        Access tokens, renewed as they age.
    worker
        Where accepted work goes.
    specs
        Announced at every (re)connection.
    config_dir
        Where broker credentials are cached (mode 0600).
    interval_s
        Heartbeat period.
    reconnect_max_s, reconnect_early_max_s, reconnect_early_s
        Reconnect backoff: jittered, at most ``reconnect_early_max_s`` during the first
        ``reconnect_early_s`` of an outage (the platform restarting: back in seconds,
        and the registry's grace after it is back is short), then doubling up to
        ``reconnect_max_s``.
    outbox
        Telemetry waiting to be published (one is made if ``None``).
    """

    def __init__(
        self,
        identity: Identity,
        api: PeerApi,
        tokens: TokenManager,
        worker: Worker,
        specs: DeviceSpecs,
        status: StatusReporter,
        *,
        config_dir: Path,
        interval_s: float = 5.0,
        announce_every: int = 60,
        reconnect_max_s: float = 15.0,
        reconnect_early_max_s: float = 2.0,
        reconnect_early_s: float = 60.0,
        clock: Callable[[], float] = time.time,
        outbox: Outbox | None = None,
    ) -> None:
        self.identity = identity
        self.api = api
        self.tokens = tokens
        self.worker = worker
        self.specs = specs
        self.status = status
        self.config_dir = config_dir
        self.interval_s = interval_s
        self.announce_every = announce_every
        self.backoff = Backoff(
            initial_s=0.5,
            max_s=reconnect_max_s,
            early_max_s=reconnect_early_max_s,
            early_s=reconnect_early_s,
        )
        self.clock = clock
        self.session = status.session
        self._seq = 0
        self.heartbeats_sent = 0
        self.reconnects = 0
        self.tasks_received = 0
        self.outbox = outbox if outbox is not None else Outbox()
        self.telemetry_sent = 0

    def send(self, kind: str, body: BaseModel) -> None:
        """Publish ``body`` as ``peer.<id>.<kind>`` on telemetry; any thread, returns at once.

        The message waits in the outbox until the broker confirmed it (across
        reconnects, in order).
        """
        self.outbox.put(kind, body)

    # -- the loop ------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Stay connected until ``stop`` is set; announce leaving on the way out.

        Raises
        ------
        ApiError
            If the platform refuses this peer for good (a 4xx answer other than 429).
        """
        while not stop.is_set():
            try:
                await self.tokens.wait_for_token(stop)
                access = await self._broker_access()
                await self._session(access, stop)
            except asyncio.CancelledError:
                if stop.is_set():
                    break
                raise
            except ApiError as exc:
                if not exc.retryable:
                    raise
                self._lost(exc)
            except Exception as exc:
                if _refused(exc):
                    log.warning("broker refused our credentials; asking for new ones")
                    remove(self.config_dir, BROKER_FILE)
                self._lost(exc)
            if stop.is_set():
                break
            delay = self.backoff.next()
            log.info("reconnecting", in_s=round(delay, 2))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
        self.status.update(state="stopped")

    def _lost(self, exc: BaseException) -> None:
        self.reconnects += 1
        log.warning("disconnected from the platform", error=repr(exc))
        self.status.update(
            state="reconnecting", last_error=repr(exc)[:300], reconnects=self.reconnects
        )

    async def _broker_access(self) -> BrokerAccess:
        cached = read_model(self.config_dir, BROKER_FILE, BrokerAccess)
        if cached is not None:
            return cached
        token = await self.tokens.get()
        try:
            access = await self.api.broker_credentials(self.identity.peer_id, token)
        except ApiError as exc:
            if exc.status in (401, 404):  # the registry may not have caught up yet: retry
                raise ConnectionError(str(exc)) from exc
            raise
        write_json(self.config_dir, BROKER_FILE, access.model_dump())
        return access

    async def _session(self, access: BrokerAccess, stop: asyncio.Event) -> None:
        lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_close(*_: Any) -> None:
            if not lost.done():
                lost.set_result(None)

        broker = self._broker(access, on_close)
        sender: asyncio.Task[None] | None = None
        connection = None
        try:
            connection = await broker.connect()
            await broker.start()
            channel = await broker.config.channel_manager.get_channel()
            channel.close_callbacks.add(on_close)
            exchange = _Telemetry(broker, RabbitExchange(access.telemetry_exchange, declare=False))
            await self._publish(exchange, ANNOUNCE, self._announce())
            self.heartbeats_sent += 1  # an announce is a heartbeat too
            sender = asyncio.create_task(self._send_outbox(exchange))
            sender.add_done_callback(lambda _: on_close())
            self.backoff.reset()
            log.info("connected", queue=access.queue, session=self.session)
            self.status.update(
                state="connected",
                broker=access.url,
                queue=access.queue,
                last_error=None,
                last_heartbeat_at=datetime.now(UTC),
                heartbeats_sent=self.heartbeats_sent,
            )
            await self._heartbeat_until(exchange, stop, lost)
            if stop.is_set() and not lost.done():
                if not await self.outbox.drained(3.0):
                    log.warning("leaving with telemetry unsent", pending=len(self.outbox))
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        self._publish(exchange, LEAVING, self._leaving()), timeout=3
                    )
                    log.info("announced leaving")
        finally:
            if sender is not None:
                sender.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await sender
            with contextlib.suppress(Exception):
                await asyncio.wait_for(broker.stop(), 3)
            # Closed whatever stopping did: a robust connection left open would reconnect
            # and consume on its own, beside the next session's.
            if connection is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(connection.close(), 3)
        if lost.done() and not stop.is_set():
            raise ConnectionError("broker connection lost")

    def _broker(self, access: BrokerAccess, on_close: Callable[..., None]) -> RabbitBroker:
        """A session's broker: its queue consumed into :meth:`_on_message` (not started)."""
        broker = RabbitBroker(
            access.amqp_url(),
            default_channel=Channel(prefetch_count=1, publisher_confirms=True),
            timeout=10,
            on_close=(on_close,),
            app_id=None,
            logger=None,
            apply_types=False,
        )
        broker.subscriber(
            RabbitQueue(access.queue, declare=False),
            ack_policy=AckPolicy.MANUAL,
            decoder=_incoming,
        )(self._on_message)
        return broker

    async def _heartbeat_until(
        self,
        exchange: _Telemetry,
        stop: asyncio.Event,
        lost: asyncio.Future[None],
    ) -> None:
        loop = asyncio.get_running_loop()
        stopping: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        try:
            next_at = loop.time() + self.interval_s
            while not stop.is_set() and not lost.done():
                timeout = max(0.0, next_at - loop.time())
                waiting: set[asyncio.Future[Any]] = {stopping, lost}
                await asyncio.wait(waiting, timeout=timeout)
                if stop.is_set() or lost.done():
                    return
                next_at += self.interval_s
                if next_at < loop.time():  # we fell behind (suspended): do not burst
                    next_at = loop.time() + self.interval_s
                kind = ANNOUNCE if self.heartbeats_sent % self.announce_every == 0 else HEARTBEAT
                body = self._announce() if kind == ANNOUNCE else self._heartbeat()
                await self._publish(exchange, kind, body)
                self.heartbeats_sent += 1
                self.status.update(
                    last_heartbeat_at=datetime.now(UTC), heartbeats_sent=self.heartbeats_sent
                )
        finally:
            stopping.cancel()

    # -- messages ------------------------------------------------------------------------

    def _next(self) -> dict[str, Any]:
        self._seq += 1
        return {"session": self.session, "seq": self._seq, "sent_at": self.clock()}

    def _heartbeat(self) -> Heartbeat:
        return Heartbeat(**self._next(), interval_s=self.interval_s)

    def _announce(self) -> Announce:
        return Announce(**self._next(), interval_s=self.interval_s, specs=self.specs)

    def _leaving(self) -> Leaving:
        return Leaving(**self._next(), reason="shutdown")

    async def _headers(self) -> dict[str, FieldValue]:
        """The peer's signed message headers: a fresh token when the auth service answers,
        else the current one while it is valid."""
        token = self.tokens.current
        with contextlib.suppress(ApiError):
            token = await self.tokens.get()
        if token is None:
            raise ApiError("no access token")
        return dict(peer_headers(token))

    async def _publish(self, exchange: _Telemetry, kind: str, body: Heartbeat | Leaving) -> None:
        await exchange.publish(
            body.model_dump_json().encode(),
            telemetry_key(self.identity.peer_id, kind),
            content_type="application/json",
            headers=await self._headers(),
            persist=False,
            expiration=max(1.0, self.interval_s * 3) if kind == HEARTBEAT else None,
            message_id=str(uuid.uuid4()),
        )

    async def _send_outbox(self, exchange: _Telemetry) -> None:
        """Publish the outbox, oldest first, each after the previous one was confirmed.

        Returns (ending the session) when a publish fails for any reason other than a
        broker nack; the message stays in the outbox for the next session.
        """
        while True:
            item = await self.outbox.wait()
            try:
                await self._publish_outgoing(exchange, item)
            except aio_pika.exceptions.DeliveryError as exc:  # nacked: the broker is unwell
                log.warning("telemetry nacked; retrying", kind=item.kind, error=repr(exc))
                await asyncio.sleep(1.0)
                continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("telemetry publish failed", kind=item.kind, error=repr(exc))
                return
            self.outbox.confirmed(item)
            self.telemetry_sent += 1

    async def _publish_outgoing(self, exchange: _Telemetry, item: Outgoing) -> None:
        await exchange.publish(
            item.body,
            telemetry_key(self.identity.peer_id, item.kind),
            content_type="application/json",
            headers=await self._headers(),
            persist=True,
            message_id=item.message_id,
            mandatory=True,
            timeout=30,
        )

    async def _on_message(self, message: AbstractIncomingMessage) -> None:
        """Accept the message (ack at once) and hand it to the worker."""
        await message.ack()
        self.tasks_received += 1
        self.worker.submit(
            WorkItem(
                routing_key=message.routing_key or "",
                body=message.body,
                message_id=message.message_id,
            )
        )
        self.status.note(tasks_received=self.tasks_received)  # written with the heartbeat
        log.info("accepted a message", routing_key=message.routing_key, body=_preview(message.body))


_PREVIEW_FIELDS = ("type", "task_id", "job_id", "round", "attempt", "shard", "reason")


def _preview(body: bytes) -> str:
    """A short, secret-free view of a message (tasks carry presigned URLs: never logged)."""
    try:
        payload = json.loads(body)
    except ValueError:
        return f"<{len(body)} bytes, not JSON>"
    if isinstance(payload, dict):
        payload = {k: payload[k] for k in _PREVIEW_FIELDS if k in payload}
    return json.dumps(payload)[:200]
