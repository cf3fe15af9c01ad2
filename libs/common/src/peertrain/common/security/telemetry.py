"""Consuming what peers send on ``peertrain.telemetry``: verified, typed, or refused.

::

    async def on_update(sender: PeerMessage[UpdateAnnounced]) -> None: ...

    ctx.subscriptions.add_messages(
        "aggregator.updates", ["peer.*.update"],
        peer_message_handler(ctx, {"update": UpdateAnnounced}, on_update),
        exchange=TELEMETRY,
    )

A message is refused (counted by reason, logged at most once a second per queue and
reason, and dropped: never dead-lettered, so junk cannot grow a queue) when
its routing key is not ``peer.<id>.<kind>`` of a known kind, its body is larger than
:data:`~peertrain.common.bus.rate.MAX_PEER_MESSAGE_BYTES` (``too_large``), its peer sent
more than its budget of messages or bytes a second on this queue (``over_rate``; the
others' budgets are their own: :class:`~peertrain.common.bus.rate.SenderBudget`), its
token is missing, not valid or not that peer's, or its body does not parse (a NUL, a
NaN, a number out of range: the body models refuse them). Peers are untrusted: everything
the handler gets is checked for form and sender; what it *means* (is this task that
peer's?) is the handler's to check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import structlog
from faststream.exceptions import NackMessage
from faststream.rabbit import RabbitMessage
from pydantic import BaseModel, ValidationError

from peertrain.common.app.context import ServiceContext
from peertrain.common.bus.rate import MAX_PEER_MESSAGE_BYTES, SenderBudget
from peertrain.common.bus.retry import delivery_count
from peertrain.common.events.peers import parse_telemetry_key
from peertrain.common.logging import warn_throttled
from peertrain.common.metrics import REFUSED_MESSAGES

from .claims import Principal
from .errors import InsufficientRole, InvalidToken
from .messages import verify_message

__all__ = ["PassOn", "PeerMessage", "peer_message_handler", "refuse"]

log = structlog.get_logger(__name__)

B = TypeVar("B", bound=BaseModel)


@dataclass(frozen=True)
class PeerMessage(Generic[B]):
    """A verified message from a peer: who sent it, which kind, the parsed body."""

    peer_id: str
    kind: str
    body: B
    principal: Principal
    message_id: str | None
    deliveries: int = 0
    """How many times the queue delivered the message before (0 the first time)."""


class PassOn(Exception):
    """Raised by a handler for a message another instance should take: the message goes
    back to its queue (once: a handler passes on only a first delivery), whose next
    delivery goes to one of the queue's consumers, most often another instance's."""


def refuse(queue: str, reason: str, **detail: object) -> None:
    """Count a refused peer message; log it unless this reason was logged just now."""
    REFUSED_MESSAGES.labels(queue=queue, reason=reason).inc()
    key = ("refuse", queue, reason)
    warn_throttled(log, key, "refusing a peer message", queue=queue, reason=reason, **detail)


def peer_message_handler(
    ctx: ServiceContext,
    kinds: Mapping[str, type[BaseModel]],
    handler: Callable[[PeerMessage[BaseModel]], Awaitable[None]],
    *,
    queue: str = "",
    budget: SenderBudget | None = None,
) -> Callable[[RabbitMessage], Awaitable[None]]:
    """Wrap ``handler`` so it only sees verified, parsed peer messages of ``kinds``, each
    peer within ``budget`` (default: a :class:`SenderBudget` of this handler's own)."""
    budget = budget or SenderBudget()

    async def handle(message: RabbitMessage) -> None:
        key = message.raw_message.routing_key or ""
        parsed = parse_telemetry_key(key)
        if parsed is None or parsed[1] not in kinds:
            refuse(queue, "malformed_key", routing_key=key[:200])
            return
        peer_id, kind = parsed
        size = len(message.body)
        if size > MAX_PEER_MESSAGE_BYTES:
            refuse(queue, "too_large", peer_id=peer_id[:200], kind=kind, size=size)
            return
        if not budget.admit(peer_id, size, now=asyncio.get_running_loop().time()):
            refuse(queue, "over_rate", peer_id=peer_id[:200], kind=kind)
            return
        security = ctx.security
        if security is None:  # install_security runs before any subscription starts
            raise RuntimeError("token verification is not installed")
        try:
            principal = await verify_message(security, message.headers, peer_id=peer_id)
        except (InvalidToken, InsufficientRole) as exc:
            refuse(queue, "bad_token", peer_id=peer_id[:200], error=str(exc))
            return
        try:
            body = kinds[kind].model_validate_json(message.body)
        except ValidationError as exc:
            refuse(queue, "bad_body", peer_id=peer_id, kind=kind, error=str(exc)[:500])
            return
        deliveries = delivery_count(message)
        try:
            await handler(
                PeerMessage(peer_id, kind, body, principal, message.message_id, deliveries)
            )
        except PassOn:
            raise NackMessage(requeue=True) from None

    return handle
