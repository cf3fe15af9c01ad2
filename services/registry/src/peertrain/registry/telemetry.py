"""Consuming peer telemetry: heartbeats (the hot path) and announce/leaving messages.

Heartbeats are consumed straight off ``aiormq`` (one task per delivery, no framework
layers) from a classic queue, with a large prefetch and acknowledgements batched
(``multiple=True``): ordering does not matter, and the effect is in memory. A refused
heartbeat (bad token, another peer's token, malformed, over its rate) is dropped and
counted in ``registry_rejected_heartbeats_total``; it is not dead-lettered, since
whoever can publish could fill a dead-letter queue. The heartbeat queue has a message
TTL: after an outage, heartbeats older than that are old news.

Junk must not crowd out honest peers (issue 12, hole 8): one queue is FIFO, so what
matters is that junk costs next to nothing. A token verified before is a dictionary
look-up; a token refused before too. Only a token never seen costs an RSA check, and
those are budgeted per routing-key peer id (``unverified_rate_per_s``): a flood of
forged tokens on one key is dropped without cryptography once its budget is spent,
while that peer's already-verified token keeps passing. (A peer's broker user may only
publish on its own key, so a hostile peer spends only its own budget.) A key of no
enrolled peer is refused before any verification, and all keys together get
``unverified_total_per_s`` verifications, which caps what junk sprayed over many keys
can cost. Verified messages then spend a per-peer rate (``telemetry_rate_per_s``,
hole 7).

Announce and leaving messages are few and have effects in the log: they go through a
dead-lettered quorum queue and are acknowledged one by one after their effect. A
refused one (bad token, over its rate, specs out of bounds, owner over the peer quota)
is counted in ``registry_rejected_telemetry_total`` and dropped; only a failure to
record (the database away) is retried, and dead-lettered after the delivery limit.

The connection is supervised here: it is re-established with backoff after any loss,
and while it is down, liveness is paused (a blind registry must not declare every
peer offline).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import aiormq
import structlog
from aiormq.abc import DeliveredMessage
from pydantic import ValidationError

from peertrain.common.bus import DLX, TELEMETRY, dlq_name
from peertrain.common.events.peers import (
    ANNOUNCE,
    HEARTBEAT,
    LEAVING,
    Announce,
    Heartbeat,
    Leaving,
    parse_telemetry_key,
    telemetry_key,
)
from peertrain.common.security import (
    InsufficientRole,
    InvalidToken,
    Principal,
    UnknownSigningKey,
    token_from_headers,
)

from .config import RegistrySettings
from .domain.errors import PeerQuotaExceeded, RegistryError
from .domain.ratelimit import RateLimiter
from .domain.specs import spec_problem
from .metrics import REJECTED_HEARTBEATS, REJECTED_TELEMETRY, TELEMETRY_CONNECTED
from .presence import Presence
from .tokens import TokenCache

__all__ = ["Refused", "TelemetryConsumer"]

log = structlog.get_logger(__name__)


class Refused(RegistryError, ValueError):
    """A telemetry message that is not acted on; ``reason`` is a metric label."""

    code = "telemetry_refused"

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"telemetry refused: {reason}")
        self.reason = reason
        self.detail = detail


def _sender(message: DeliveredMessage, kinds: tuple[str, ...]) -> tuple[str, str]:
    parsed = parse_telemetry_key(message.routing_key or "")
    if parsed is None or parsed[1] not in kinds:
        raise Refused("malformed")
    return parsed


def _tag(message: DeliveredMessage) -> int:
    return int(getattr(message.delivery, "delivery_tag", 0) or 0)


def _check(principal: Principal, peer_id: str) -> None:
    if not principal.is_peer:
        raise Refused("not_a_peer")
    if principal.subject != peer_id:
        raise Refused("wrong_peer")


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
    """Consume telemetry into :class:`Presence` over a supervised connection.

    Parameters
    ----------
    settings
        Queue names, prefetch, TTL, reconnect backoff, AMQP URL.
    presence
        Where verified telemetry goes.
    tokens
        Token verification with a cache.
    """

    def __init__(
        self,
        settings: RegistrySettings,
        presence: Presence,
        tokens: TokenCache,
        *,
        known: Callable[[str], bool] = lambda _: True,
        removed: Callable[[str], bool] = lambda _: False,
    ) -> None:
        self.settings = settings
        self.presence = presence
        self.tokens = tokens
        self.known = known
        self.removed = removed
        self.rate = RateLimiter(settings.telemetry_rate_per_s, settings.telemetry_burst)
        self.unverified = RateLimiter(settings.unverified_rate_per_s, settings.unverified_burst)
        self.unverified_total = RateLimiter(
            settings.unverified_total_per_s, settings.unverified_total_burst, max_keys=1
        )
        self.bounds = settings.spec_bounds()
        self.heartbeat_queue = settings.queue("heartbeats")
        self.presence_queue = settings.queue("presence")
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._acks: _Acks | None = None
        self._last_warning: dict[str, float] = {}

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Consume in the background, reconnecting forever."""
        if self._task is None:
            self.presence.blind()
            self._task = asyncio.create_task(self._supervise(), name="registry-telemetry")

    async def stop(self) -> None:
        """Stop consuming."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _supervise(self) -> None:
        delay = 0.2
        url = self.settings.amqp_url.get_secret_value()
        while True:
            connection: aiormq.abc.AbstractConnection | None = None
            try:
                connection = await asyncio.wait_for(aiormq.connect(url), 10)
                channels = await self._consume(connection)
                self.presence.seeing()
                self.connected.set()
                TELEMETRY_CONNECTED.set(1)
                log.info("consuming telemetry", queues=[self.heartbeat_queue, self.presence_queue])
                delay = 0.2
                await self._until_closed(connection, channels)
                log.warning("telemetry connection lost; liveness paused until it is back")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("telemetry connection failed", error=repr(exc), retry_in_s=delay)
            finally:
                self.connected.clear()
                TELEMETRY_CONNECTED.set(0)
                self.presence.blind()
                if connection is not None and not connection.is_closed:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(connection.close(), 2)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.settings.reconnect_max_s)

    async def _until_closed(
        self, connection: aiormq.abc.AbstractConnection, channels: list[aiormq.abc.AbstractChannel]
    ) -> None:
        closings: list[asyncio.Future[Any]] = [connection.closing, *(c.closing for c in channels)]
        flusher = asyncio.create_task(self._flush_acks_forever())
        try:
            await asyncio.wait(closings, return_when=asyncio.FIRST_COMPLETED)
        finally:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
            for closing in closings:  # retrieve exceptions so none is "never retrieved"
                if closing.done() and not closing.cancelled():
                    closing.exception()

    async def _flush_acks_forever(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            if self._acks is not None:
                with contextlib.suppress(Exception):
                    await self._acks.flush()

    # -- topology ---------------------------------------------------------------------------

    async def _consume(
        self, connection: aiormq.abc.AbstractConnection
    ) -> list[aiormq.abc.AbstractChannel]:
        s = self.settings
        heartbeats = await connection.channel()
        await heartbeats.basic_qos(prefetch_count=s.heartbeat_prefetch)
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

        presence = await connection.channel()
        await presence.basic_qos(prefetch_count=s.presence_prefetch)
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

    # -- heartbeats: the hot path -------------------------------------------------------------

    async def _principal(self, message: DeliveredMessage, peer_id: str) -> Principal:
        """Who signed the message: from memory when the token was seen before; else a
        full verification, if the routing key's budget for unknown tokens allows."""
        token = token_from_headers(message.header.properties.headers)
        principal = self.tokens.cached(token)
        if principal is not None:
            return principal
        if not self.known(peer_id):
            raise Refused("unknown_peer")  # no enrolled peer has this key: no token can fit
        now = time.monotonic()
        if not self.unverified.allow(peer_id, now) or not self.unverified_total.allow("", now):
            raise Refused("unverified_rate")
        try:
            return self.tokens.verify(token)
        except UnknownSigningKey:
            return await self.tokens.authenticate(token)

    def _admit(self, principal: Principal, peer_id: str) -> None:
        """The checks of a verified sender: the key is its own, it is not removed, and
        it is within its rate."""
        _check(principal, peer_id)
        if self.removed(peer_id):
            raise Refused("removed")
        if not self.rate.allow(peer_id, time.monotonic()):
            raise Refused("rate_limited")

    async def _on_heartbeat(self, message: DeliveredMessage) -> None:
        try:
            peer_id, _ = _sender(message, (HEARTBEAT,))
            self._admit(await self._principal(message, peer_id), peer_id)
            heartbeat = Heartbeat.model_validate_json(message.body)
        except Refused as exc:
            self._refused(exc.reason, message)
        except (InvalidToken, InsufficientRole):
            self._refused("invalid_token", message)
        except ValidationError:
            self._refused("malformed", message)
        else:
            self.presence.heartbeat(peer_id, heartbeat)
        acks = self._acks
        if acks is not None and acks.channel is message.channel:
            await acks.done(_tag(message))

    def _refused(
        self, reason: str, message: DeliveredMessage, *, kind: str = HEARTBEAT, why: str = ""
    ) -> None:
        counter = REJECTED_HEARTBEATS if kind == HEARTBEAT else REJECTED_TELEMETRY
        counter.labels(reason=reason).inc()
        now = time.monotonic()
        if now - self._last_warning.get(reason, 0.0) > 1.0:  # one line a second per reason
            self._last_warning[reason] = now
            log.warning(
                "telemetry refused",
                kind=kind,
                reason=reason,
                routing_key=message.routing_key,
                **({"detail": why} if why else {}),
            )

    # -- announce / leaving -----------------------------------------------------------------

    async def _on_presence(self, message: DeliveredMessage) -> None:
        channel = message.channel
        tag = _tag(message)
        kind = ANNOUNCE
        try:
            peer_id, kind = _sender(message, (ANNOUNCE, LEAVING))
            self._admit(await self._principal(message, peer_id), peer_id)
            if kind == ANNOUNCE:
                announce = Announce.model_validate_json(message.body)
                problem = spec_problem(announce.specs, self.bounds)
                if problem is not None:
                    raise Refused("specs_out_of_bounds", problem)
                await self.presence.announce(peer_id, announce)
            else:
                self.presence.leaving(peer_id, Leaving.model_validate_json(message.body))
        except (Refused, InvalidToken, InsufficientRole, ValidationError, PeerQuotaExceeded) as exc:
            # Refused for good: counted and dropped (a dead-letter queue that whoever can
            # publish could fill would be a second way in for junk).
            reason = exc.reason if isinstance(exc, Refused) else _reason(exc)
            why = exc.detail if isinstance(exc, Refused) else ""
            self._refused(reason, message, kind=kind, why=why)
            await channel.basic_ack(tag)
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


def _reason(exc: Exception) -> str:
    if isinstance(exc, PeerQuotaExceeded):
        return "peer_quota_exceeded"
    if isinstance(exc, ValidationError):
        return "malformed"
    return "invalid_token"
