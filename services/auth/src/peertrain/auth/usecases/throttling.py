"""Throttling: take a slot of a limit before the costly work, or refuse (429)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog
from prometheus_client import Counter

from peertrain.auth.domain.errors import TooManyAttempts
from peertrain.auth.domain.throttle import Limit, Refused, Slot

if TYPE_CHECKING:
    from peertrain.auth.application import AuthApp

__all__ = ["THROTTLED", "admit"]

log = structlog.get_logger(__name__)

THROTTLED = Counter(
    "peertrain_auth_throttled_total",
    "Requests refused by a throttling limit (login_user, login_address, register)",
    ["limit"],
)


async def admit(auth: AuthApp, limit: Limit, *parts: str) -> Slot:
    """A slot of ``limit`` for the key of ``parts``.

    Raises
    ------
    TooManyAttempts
        When the key has no slot left in this window (429, with Retry-After).
    """
    decision = await auth.throttle.take(limit, limit.key(*parts), now=auth.now())
    if isinstance(decision, Refused):
        THROTTLED.labels(limit=limit.name).inc()
        log.warning("throttled", limit=limit.name, retry_after_s=decision.retry_after_s)
        raise TooManyAttempts(decision.retry_after_s, limit.what)
    return decision
