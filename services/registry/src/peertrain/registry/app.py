"""Wiring: the registry's FastAPI app on the common app factory."""

from __future__ import annotations

from fastapi import FastAPI

from peertrain.common.app import ServiceContext, create_app
from peertrain.common.periodic import Periodic
from peertrain.common.security import install_security

from . import subscribers
from .api import ROUTERS
from .api.deps import REGISTRY_EXTRA
from .config import RegistrySettings
from .usecases import RegistryContext, peers, readmodel

__all__ = ["create_registry_app", "setup_registry"]


async def setup_registry(ctx: ServiceContext, settings: RegistrySettings) -> RegistryContext:
    """Start-up: token verification, read model, subscriptions, telemetry."""
    security = await install_security(ctx, queue=settings.queue("security"))
    reg = RegistryContext.build(ctx, settings, security)
    await readmodel.load(reg)
    telemetry = subscribers.subscribe(ctx, reg)
    reg.start()
    ctx.on_shutdown.append(reg.stop)
    # peers of disabled owners, whatever order the events came in (see the function)
    sweep = Periodic(
        "registry-disabled-owners",
        settings.disabled_sweep_s,
        lambda: peers.revoke_disabled_owners(reg),
    )
    sweep.start()
    ctx.on_shutdown.append(sweep.stop)
    telemetry.start()
    ctx.on_shutdown.append(telemetry.stop)  # hooks run last first: consuming stops first
    ctx.extras[REGISTRY_EXTRA] = reg
    return reg


def create_registry_app(settings: RegistrySettings | None = None) -> FastAPI:
    """The registry service.

    Raises
    ------
    ValueError
        If the configuration is unsafe in production.
    """
    settings = settings or RegistrySettings()  # create_app refuses unsafe settings

    async def setup(ctx: ServiceContext) -> None:
        await setup_registry(ctx, settings)

    return create_app(
        settings, routers=ROUTERS, setup=setup, use_blobs=False, title="PeerTrain registry"
    )
