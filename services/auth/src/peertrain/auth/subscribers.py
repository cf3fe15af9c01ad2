"""Auth's event subscribers.

``auth.audit`` receives every event auth produces, and the registry's ``peer.removed``:
it keeps the security audit trail (one structured log line per event, a counter for
refresh-token reuse), applies ``user.disabled`` locally (see :mod:`.projections`) and
marks a removed peer so that it gets no more tokens. Its effects are idempotent (a log
line, a flag set, sessions revoked), so a redelivery is harmless.
"""

from __future__ import annotations

import structlog
from prometheus_client import Counter

from peertrain.common.app import ServiceContext
from peertrain.common.events import RecordedEvent
from peertrain.common.events.auth import AUTH_KEYS_ROTATED, AUTH_REFRESH_REUSE_DETECTED
from peertrain.common.events.peers import PEER_ENROLLED, PEER_REMOVED, PeerRemoved
from peertrain.common.events.users import USER_DISABLED, USER_REGISTERED, UserDisabled

from .usecases import AuthContext, peers
from .usecases.accounts import apply_disabled

__all__ = ["AUDITED", "AUDIT_QUEUE", "subscribe"]

log = structlog.get_logger(__name__)

AUDIT_QUEUE = "audit"
"""The purpose of auth's audit queue (``auth.audit`` with the default prefix)."""
AUDITED = (
    USER_REGISTERED,
    USER_DISABLED,
    PEER_ENROLLED,
    PEER_REMOVED,
    AUTH_KEYS_ROTATED,
    AUTH_REFRESH_REUSE_DETECTED,
)

SECURITY_EVENTS = Counter(
    "peertrain_auth_security_events_total", "Security-relevant auth events seen", ["type"]
)


def subscribe(ctx: ServiceContext, auth: AuthContext) -> None:
    """Register auth's subscriptions on the service context."""

    async def on_audited(event: RecordedEvent) -> None:
        SECURITY_EVENTS.labels(type=event.type).inc()
        level = "warning" if event.type == AUTH_REFRESH_REUSE_DETECTED else "info"
        getattr(log, level)("audit", audit_type=event.type, stream=event.stream, actor=event.actor)
        if isinstance(event.data, UserDisabled) and await auth.users.get(event.data.user_id):
            await apply_disabled(auth, event.data.user_id)
        elif isinstance(event.data, PeerRemoved):
            await peers.removed(auth, event.data, at=event.occurred_at)

    ctx.subscriptions.add(auth.settings.queue(AUDIT_QUEUE), AUDITED, on_audited)
