"""Wiring: the dataset service's FastAPI app on the common app factory."""

from __future__ import annotations

import asyncio

from fastapi import FastAPI

from peertrain.common.app import ServiceContext, create_app
from peertrain.common.security import install_security

from . import subscribers
from .api import ROUTERS
from .api.deps import DATASET_EXTRA
from .config import DatasetSettings
from .usecases import DatasetContext

__all__ = ["create_dataset_app", "setup_dataset"]


async def setup_dataset(ctx: ServiceContext, settings: DatasetSettings) -> DatasetContext:
    """Start-up: token verification, indexes, scratch space, subscriptions."""
    await install_security(ctx, queue=settings.queue("security"))
    dctx = DatasetContext.build(ctx, settings)
    await dctx.views.ensure_indexes()
    await asyncio.to_thread(settings.work_dir.mkdir, parents=True, exist_ok=True)
    await asyncio.to_thread(dctx.sweep_work_dir)
    subscribers.subscribe(ctx, dctx)
    ctx.extras[DATASET_EXTRA] = dctx
    return dctx


def create_dataset_app(settings: DatasetSettings | None = None) -> FastAPI:
    """The dataset service."""
    settings = settings or DatasetSettings()

    async def setup(ctx: ServiceContext) -> None:
        await setup_dataset(ctx, settings)

    return create_app(settings, routers=ROUTERS, setup=setup, title="PeerTrain datasets")
