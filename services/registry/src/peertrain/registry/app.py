"""Wiring: the registry's application on the platform's connections, and its FastAPI
app on the common app factory."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from peertrain.common.app import Ports, ServiceContext, create_app, subscribe
from peertrain.common.clock import SYSTEM_CLOCK
from peertrain.common.periodic import Periodic
from peertrain.common.security import install_security

from .api import ROUTERS
from .application import REGISTRY_SUBSCRIPTIONS, RegistryApp
from .config import RegistrySettings
from .store import ReadModelStore
from .subscribers import TelemetryConsumer
from .usecases import peers, readmodel
from .usecases.broker_admin import BrokerAdmin

__all__ = ["create_registry_app", "setup_registry"]


def _management_api(settings: RegistrySettings) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=settings.rabbitmq_management_url,
        auth=(settings.rabbitmq_admin_user, settings.rabbitmq_admin_password.get_secret_value()),
        timeout=10.0,
    )


async def setup_registry(ctx: ServiceContext, settings: RegistrySettings) -> RegistryApp:
    """Start-up: token verification, read model, subscriptions, telemetry."""
    security = await install_security(ctx, queue=settings.queue("security"))
    http = _management_api(settings)
    ctx.on_shutdown.append(http.aclose)  # hooks run last first: closed after the app stops
    accounts = BrokerAdmin(
        http,
        ctx.broker,
        vhost=settings.rabbitmq_vhost,
        delivery_limit=settings.delivery_limit,
        password_bytes=settings.peer_password_bytes,
    )
    app = RegistryApp(
        Ports(log=ctx.log, clock=SYSTEM_CLOCK),
        settings,
        security,
        store=ReadModelStore(ctx.db),
        accounts=accounts,
    )
    await readmodel.load(app)
    subscribe(ctx, app, REGISTRY_SUBSCRIPTIONS, settings)
    telemetry = TelemetryConsumer(app)
    app.start()
    ctx.on_shutdown.append(app.stop)
    # peers of disabled owners, whatever order the events came in (see the function)
    sweep = Periodic(
        "registry-disabled-owners",
        settings.disabled_sweep_s,
        lambda: peers.revoke_disabled_owners(app),
    )
    sweep.start()
    ctx.on_shutdown.append(sweep.stop)
    telemetry.start()
    ctx.on_shutdown.append(telemetry.stop)  # hooks run last first: consuming stops first
    ctx.application = app
    return app


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
