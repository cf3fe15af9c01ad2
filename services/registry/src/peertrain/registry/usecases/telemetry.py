"""What a telemetry message may cost, and what it does: heartbeats, announce, leaving.

Junk must not crowd out honest peers (issue 12, hole 8): the heartbeat queue is FIFO,
so what matters is that junk costs next to nothing. A token verified before is a
dictionary look-up; a token refused before too. Only a token never seen costs an RSA
check, and those are budgeted per routing-key peer id (``unverified_rate_per_s``): a
flood of forged tokens on one key is dropped without cryptography once its budget is
spent, while that peer's already-verified token keeps passing. (A peer's broker user
may only publish on its own key, so a hostile peer spends only its own budget.) A key
of no enrolled peer is refused before any verification, and all keys together get
``unverified_total_per_s`` verifications, which caps what junk sprayed over many keys
can cost. Verified messages then spend a per-peer rate (``telemetry_rate_per_s``,
hole 7).

A refused heartbeat (bad token, another peer's token, malformed, over its rate) is
counted in ``registry_rejected_heartbeats_total``; a refused announce or leaving (also:
specs out of bounds, owner over the peer quota) in ``registry_rejected_telemetry_total``.
Either is dropped: never dead-lettered, since whoever can publish could fill a
dead-letter queue. The transport (queues, acknowledgements) is in
:mod:`peertrain.registry.subscribers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import structlog
from pydantic import ValidationError

from peertrain.common.events.peers import (
    ANNOUNCE,
    HEARTBEAT,
    LEAVING,
    Announce,
    Heartbeat,
    Leaving,
    parse_telemetry_key,
)
from peertrain.common.logging import warn_throttled
from peertrain.common.security import (
    InsufficientRole,
    InvalidToken,
    Principal,
    UnknownSigningKey,
    token_from_headers,
)
from peertrain.registry.domain.errors import PeerQuotaExceeded, RegistryError
from peertrain.registry.domain.ratelimit import RateLimiter
from peertrain.registry.domain.specs import spec_problem
from peertrain.registry.metrics import REJECTED_HEARTBEATS, REJECTED_TELEMETRY

from .peers import announce

if TYPE_CHECKING:
    from peertrain.registry.application import RegistryApp

__all__ = ["Refused", "Telemetry", "TelemetryGate", "TelemetryMessage"]

log = structlog.get_logger(__name__)


class Telemetry(Protocol):
    """A telemetry message as the gate reads it, whatever brought it."""

    @property
    def routing_key(self) -> str | None:
        """``peer.<id>.<kind>``."""
        ...

    @property
    def headers(self) -> Mapping[str, Any] | None:
        """The message's headers (the bearer token)."""
        ...

    @property
    def body(self) -> bytes:
        """The JSON body."""
        ...


@dataclass(frozen=True, slots=True)
class TelemetryMessage:
    """A :class:`Telemetry` message by value (tests, and transports whose own messages
    do not read as one)."""

    routing_key: str | None
    headers: Mapping[str, Any] | None
    body: bytes


class Refused(RegistryError, ValueError):
    """A telemetry message that is not acted on; ``reason`` is a metric label."""

    code = "telemetry_refused"

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"telemetry refused: {reason}")
        self.reason = reason
        self.detail = detail


def _sender(message: Telemetry, kinds: tuple[str, ...]) -> tuple[str, str]:
    parsed = parse_telemetry_key(message.routing_key or "")
    if parsed is None or parsed[1] not in kinds:
        raise Refused("malformed")
    return parsed


def _check(principal: Principal, peer_id: str) -> None:
    if not principal.is_peer:
        raise Refused("not_a_peer")
    if principal.subject != peer_id:
        raise Refused("wrong_peer")


class TelemetryGate:
    """Admission and effect of telemetry messages (the registry's rate limiters live
    here)."""

    def __init__(self, reg: RegistryApp) -> None:
        settings = reg.settings
        self.reg = reg
        self.rate = RateLimiter(settings.telemetry_rate_per_s, settings.telemetry_burst)
        self.unverified = RateLimiter(settings.unverified_rate_per_s, settings.unverified_burst)
        self.unverified_total = RateLimiter(
            settings.unverified_total_per_s, settings.unverified_total_burst, max_keys=1
        )
        self.bounds = settings.spec_bounds()

    async def _principal(self, message: Telemetry, peer_id: str) -> Principal:
        """Who signed the message: from memory when the token was seen before; else a
        full verification, if the routing key's budget for unknown tokens allows."""
        tokens = self.reg.tokens
        token = token_from_headers(message.headers)
        principal = tokens.cached(token)
        if principal is not None:
            return principal
        if not self.reg.is_known(peer_id):
            raise Refused("unknown_peer")  # no enrolled peer has this key: no token can fit
        now = self.reg.clock.monotonic()
        if not self.unverified.allow(peer_id, now) or not self.unverified_total.allow("", now):
            raise Refused("unverified_rate")
        try:
            return tokens.verify(token)
        except UnknownSigningKey:
            return await tokens.authenticate(token)

    def _admit(self, principal: Principal, peer_id: str) -> None:
        """The checks of a verified sender: the key is its own, it is not removed, and
        it is within its rate."""
        _check(principal, peer_id)
        if self.reg.is_removed(peer_id):
            raise Refused("removed")
        if not self.rate.allow(peer_id, self.reg.clock.monotonic()):
            raise Refused("rate_limited")

    async def heartbeat(self, message: Telemetry) -> None:
        """A heartbeat: into liveness (memory only), or counted as refused."""
        try:
            peer_id, _ = _sender(message, (HEARTBEAT,))
        except Refused as exc:
            self._refused(exc.reason, message)
            return
        try:
            self._admit(await self._principal(message, peer_id), peer_id)
            heartbeat = Heartbeat.model_validate_json(message.body)
        except Refused as exc:
            self._refused(exc.reason, message, peer_id=peer_id)
        except (InvalidToken, InsufficientRole):
            self._refused("invalid_token", message, peer_id=peer_id)
        except ValidationError:
            self._refused("malformed", message, peer_id=peer_id)
        else:
            self.reg.presence.heartbeat(peer_id, heartbeat)

    async def presence(self, message: Telemetry) -> None:
        """An announce or leaving message: its effect, or counted as refused.

        Raises
        ------
        Exception
            Only when the effect could not be recorded (the database away): retry.
        """
        kind = ANNOUNCE
        try:
            peer_id, kind = _sender(message, (ANNOUNCE, LEAVING))
            self._admit(await self._principal(message, peer_id), peer_id)
            if kind == ANNOUNCE:
                body = Announce.model_validate_json(message.body)
                problem = spec_problem(body.specs, self.bounds)
                if problem is not None:
                    raise Refused("specs_out_of_bounds", problem)
                await announce(self.reg, peer_id, body)
            else:
                self.reg.presence.leaving(peer_id, Leaving.model_validate_json(message.body))
        except (Refused, InvalidToken, InsufficientRole, ValidationError, PeerQuotaExceeded) as exc:
            # Refused for good: counted and dropped (a dead-letter queue that whoever can
            # publish could fill would be a second way in for junk).
            reason = exc.reason if isinstance(exc, Refused) else _reason(exc)
            why = exc.detail if isinstance(exc, Refused) else ""
            self._refused(reason, message, kind=kind, why=why)

    def _refused(
        self,
        reason: str,
        message: Telemetry,
        *,
        kind: str = HEARTBEAT,
        why: str = "",
        peer_id: str | None = None,
    ) -> None:
        counter = REJECTED_HEARTBEATS if kind == HEARTBEAT else REJECTED_TELEMETRY
        counter.labels(reason=reason).inc()
        if kind == HEARTBEAT:
            self.reg.presence.refused(peer_id)  # a flood on a key holds that peer only
        warn_throttled(
            log,
            ("telemetry", reason),
            "telemetry refused",
            kind=kind,
            reason=reason,
            routing_key=message.routing_key,
            **({"detail": why} if why else {}),
        )


def _reason(exc: Exception) -> str:
    if isinstance(exc, PeerQuotaExceeded):
        return "peer_quota_exceeded"
    if isinstance(exc, ValidationError):
        return "malformed"
    return "invalid_token"
