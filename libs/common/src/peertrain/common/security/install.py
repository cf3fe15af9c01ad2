"""Wiring token verification into a service: ``await install_security(ctx)`` in setup."""

from __future__ import annotations

from peertrain.common.app.context import ServiceContext
from peertrain.common.bus import declare_queue

from .deps import SECURITY_EXTRA
from .settings import SecuritySettings
from .state import SECURITY_EVENT_TYPES, Security

__all__ = ["install_security", "security_queue"]


def security_queue(service_name: str) -> str:
    """The queue on which a service hears of key sets and disabled users."""
    return f"{service_name}.security"


async def install_security(
    ctx: ServiceContext,
    *,
    settings: SecuritySettings | None = None,
    queue: str | None = None,
) -> Security:
    """Give a service local token verification, kept current from the log and the bus.

    Call it from the service's ``setup`` hook (before consumers start). It subscribes
    ``<service>.security`` to ``auth.keys_rotated`` and ``user.disabled``, declares
    that queue *before* reading the log (so nothing appended in between is missed),
    loads the current key set and disabled users, and starts the periodic re-read.
    Routes then use ``CurrentUser``, ``CurrentPeer`` or ``require_role``.

    Notes
    -----
    Several instances of one service share the queue, so each event reaches one of
    them; the others catch up through the unknown-``kid`` re-read (keys) and the
    periodic re-read (disabled users, within ``refresh_interval_s``).
    """
    security = Security(ctx.log, settings)
    name = queue or security_queue(ctx.settings.service_name)
    ctx.subscriptions.add(name, SECURITY_EVENT_TYPES, security.on_event)
    await declare_queue(
        ctx.broker,
        name,
        routing_keys=SECURITY_EVENT_TYPES,
        delivery_limit=ctx.subscriptions.delivery_limit,
    )
    await security.refresh()
    security.start()
    ctx.on_shutdown.append(security.stop)
    ctx.extras[SECURITY_EXTRA] = security
    return security
