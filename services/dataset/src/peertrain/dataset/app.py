"""Wiring: the dataset service's FastAPI app on the common app factory."""

from __future__ import annotations

from fastapi import FastAPI

from peertrain.common.app import Ports, ServiceContext, create_app, subscribe
from peertrain.common.clock import SYSTEM_CLOCK
from peertrain.common.security import install_security

from .api import ROUTERS
from .application import DATASET_SUBSCRIPTIONS, DatasetApp
from .config import DatasetSettings

__all__ = ["create_dataset_app", "setup_dataset"]


async def setup_dataset(ctx: ServiceContext, settings: DatasetSettings) -> DatasetApp:
    """Start-up: token verification, the application (indexes, scratch space) and its
    subscriptions."""
    await install_security(ctx, queue=settings.queue("security"))
    ports = Ports(log=ctx.log, blobs=ctx.blobs, clock=SYSTEM_CLOCK)
    app = DatasetApp.build(ports, ctx.db, settings)
    await app.start()
    subscribe(ctx, app, DATASET_SUBSCRIPTIONS, settings)
    ctx.application = app
    return app


def create_dataset_app(settings: DatasetSettings | None = None) -> FastAPI:
    """The dataset service."""
    settings = settings or DatasetSettings()

    async def setup(ctx: ServiceContext) -> None:
        await setup_dataset(ctx, settings)

    return create_app(settings, routers=ROUTERS, setup=setup, title="PeerTrain datasets")
