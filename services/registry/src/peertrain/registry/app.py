"""Wiring: the registry's FastAPI app on the common app factory."""

from __future__ import annotations

from fastapi import FastAPI

from peertrain.common.app import ServiceContext, create_app
from peertrain.common.events.peers import PEER_EVENT_TYPES
from peertrain.common.events.users import USER_DISABLED
from peertrain.common.security import install_security

from .api import ROUTERS
from .api.deps import REGISTRY_EXTRA
from .config import RegistrySettings
from .service import Registry

__all__ = ["create_registry_app", "setup_registry"]


async def setup_registry(ctx: ServiceContext, settings: RegistrySettings) -> Registry:
    """Start-up: token verification, read model, peer events, telemetry."""
    security = await install_security(ctx, queue=settings.queue("security"))
    registry = Registry(ctx, settings, security)
    await registry.load()
    # Peer events from every producer: auth's peer.enrolled (provision the peer) and
    # the registry's own (idempotent folds; also what makes them routable).
    ctx.subscriptions.add(settings.queue("peers"), PEER_EVENT_TYPES, registry.on_peer_event)
    # A disabled user's peers lose their broker users at once (issue 12, hole 9).
    ctx.subscriptions.add(settings.queue("users"), (USER_DISABLED,), registry.on_user_disabled)
    registry.start()
    ctx.on_shutdown.append(registry.stop)
    ctx.extras[REGISTRY_EXTRA] = registry
    return registry


def create_registry_app(settings: RegistrySettings | None = None) -> FastAPI:
    """The registry service.

    Raises
    ------
    ValueError
        If the configuration is unsafe in production.
    """
    settings = settings or RegistrySettings()
    problems = settings.startup_problems()
    if problems:
        raise ValueError(f"refusing to start in production: {'; '.join(problems)}")

    async def setup(ctx: ServiceContext) -> None:
        await setup_registry(ctx, settings)

    return create_app(
        settings, routers=ROUTERS, setup=setup, use_blobs=False, title="PeerTrain registry"
    )
