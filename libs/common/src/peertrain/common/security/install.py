"""Wiring token verification into a service: ``await install_security(ctx)`` in setup."""

from __future__ import annotations

from peertrain.common.app.context import ServiceContext
from peertrain.common.bus import declare_queue, retire_queues

from .settings import SecuritySettings
from .state import SECURITY_EVENT_TYPES, Security

__all__ = ["install_security", "security_queue"]

DEFAULT_INSTANCE_EXPIRES_S = 300
"""How long an instance's own security queue outlives its instance (when the service's
settings do not say: ``feed_expires_s``)."""


def security_queue(service_name: str) -> str:
    """The queue on which a service hears of key sets, disabled users and removed peers."""
    return f"{service_name}.security"


async def install_security(
    ctx: ServiceContext,
    *,
    settings: SecuritySettings | None = None,
    queue: str | None = None,
) -> Security:
    """Give a service local token verification, kept current from the log and the bus.

    Call it from the service's ``setup`` hook (before consumers start). It subscribes
    a queue to ``auth.keys_rotated``, ``user.disabled`` and ``peer.removed``, declares
    that queue *before* reading the log (so nothing appended in between is missed),
    loads the current key set and revocations, and starts the periodic re-read.
    Routes then use ``CurrentUser``, ``CurrentPeer`` or ``require_role``.

    Notes
    -----
    A service that runs as several instances (its settings name the instance:
    ``instance_name``, as the orchestrator's and the aggregator's do) gets one queue per
    instance, ``<queue>.<instance>``, deleted by the broker once its instance has been
    gone for ``feed_expires_s``: every instance hears every revocation at once (a
    removed peer's token is refused by all of them, not by one and the others a
    refresh later). The shared ``<queue>`` of earlier versions is retired. A
    single-instance service keeps the durable ``<queue>``.
    """
    security = Security(ctx.log, settings)
    name = queue or security_queue(ctx.settings.service_name)
    instance = getattr(ctx.settings, "instance_name", None)
    expires_s: int | None = None
    if isinstance(instance, str) and instance:
        shared, name = name, f"{name}.{instance}"
        expires_s = int(getattr(ctx.settings, "feed_expires_s", DEFAULT_INSTANCE_EXPIRES_S))
        # its DLQ stays: it is the shared DLQ of the per-instance queues now
        await retire_queues(ctx.settings.amqp_url.get_secret_value(), [shared], dead_letters=False)
    sub = ctx.subscriptions.add(name, SECURITY_EVENT_TYPES, security.on_event, expires_s=expires_s)
    await declare_queue(  # as the subscription will (its dead letters to the shared DLQ)
        ctx.broker,
        name,
        routing_keys=SECURITY_EVENT_TYPES,
        delivery_limit=ctx.subscriptions.delivery_limit,
        expires_s=expires_s,
        dead_letters=sub.dead_letters,
    )
    await security.refresh()
    security.start()
    ctx.on_shutdown.append(security.stop)
    ctx.security = security
    return security
