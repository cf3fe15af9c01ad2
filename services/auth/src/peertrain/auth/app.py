"""Wiring: the auth service's FastAPI app on the common app factory."""

from __future__ import annotations

from fastapi import FastAPI

from peertrain.common.app import ServiceContext, create_app
from peertrain.common.security import install_security

from . import projections, subscribers
from .api import ROUTERS
from .api.deps import AUTH_EXTRA
from .config import AuthSettings
from .usecases import AuthContext, accounts, keys, peers
from .usecases.housekeeping import Housekeeping

__all__ = ["create_auth_app", "setup_auth"]


async def setup_auth(ctx: ServiceContext, settings: AuthSettings) -> AuthContext:
    """Start-up: indexes, token verification, keys, admin, catch-up, background chores."""
    security = await install_security(ctx, queue=settings.queue("security"))
    auth = AuthContext.build(ctx, settings, security)
    await auth.ensure_indexes()
    subscribers.subscribe(ctx, auth)
    await keys.ensure_keys(auth)
    await accounts.bootstrap_admin(auth)
    await accounts.record_pending(auth)
    await peers.record_pending(auth)
    await projections.replay_disabled(auth)
    await keys.retire_due(auth)
    chores = Housekeeping(auth, interval_s=settings.housekeeping_interval_s)
    chores.start()
    ctx.on_shutdown.append(chores.stop)
    ctx.extras[AUTH_EXTRA] = auth
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
