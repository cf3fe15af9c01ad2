"""Wiring: the auth service's FastAPI app on the common app factory."""

from __future__ import annotations

from fastapi import FastAPI

from peertrain.common.app import Ports, ServiceContext, create_app, subscribe
from peertrain.common.clock import SYSTEM_CLOCK
from peertrain.common.periodic import Periodic
from peertrain.common.security import install_security

from .api import ROUTERS
from .application import AUTH_SUBSCRIPTIONS, AuthApp
from .config import AuthSettings

__all__ = ["create_auth_app", "setup_auth"]


async def setup_auth(ctx: ServiceContext, settings: AuthSettings) -> AuthApp:
    """Start-up: token verification, the application and its subscriptions, its start-up
    work (indexes, keys, admin, catch-up), and the housekeeping timer."""
    security = await install_security(ctx, queue=settings.queue("security"))
    auth = AuthApp.build(Ports(log=ctx.log, clock=SYSTEM_CLOCK), ctx.db, settings, security)
    subscribe(ctx, auth, AUTH_SUBSCRIPTIONS, settings)
    await auth.start()
    chores = Periodic("auth-housekeeping", settings.housekeeping_interval_s, auth.tick)
    chores.start()
    ctx.on_shutdown.append(chores.stop)
    ctx.application = auth
    return auth


def create_auth_app(settings: AuthSettings | None = None) -> FastAPI:
    """The auth service.

    Raises
    ------
    ValueError
        If the configuration is unsafe outside development mode.
    """
    settings = settings or AuthSettings()  # create_app refuses unsafe settings

    async def setup(ctx: ServiceContext) -> None:
        await setup_auth(ctx, settings)

    return create_app(
        settings,
        routers=ROUTERS,
        setup=setup,
        use_blobs=False,
        title="PeerTrain auth",
    )
