"""Wiring: the aggregator's FastAPI app on the common app factory."""

from __future__ import annotations

import asyncio

from fastapi import FastAPI

from peertrain.common.app import ServiceContext, create_app
from peertrain.common.security import install_security

from . import subscribers
from .api import ROUTERS
from .api.deps import AGGREGATOR_EXTRA
from .config import AggregatorSettings
from .usecases import AggregatorContext

__all__ = ["create_aggregator_app", "setup_aggregator"]


async def setup_aggregator(ctx: ServiceContext, settings: AggregatorSettings) -> AggregatorContext:
    """Start-up: token verification, scratch space, subscriptions."""
    await install_security(ctx, queue=settings.queue("security"))
    actx = AggregatorContext(ctx, settings)
    await asyncio.to_thread(settings.work_dir.mkdir, parents=True, exist_ok=True)
    subscribers.subscribe(ctx, actx)
    ctx.extras[AGGREGATOR_EXTRA] = actx
    return actx


def create_aggregator_app(settings: AggregatorSettings | None = None) -> FastAPI:
    """The aggregator service."""
    settings = settings or AggregatorSettings()

    async def setup(ctx: ServiceContext) -> None:
        await setup_aggregator(ctx, settings)

    return create_app(settings, routers=ROUTERS, setup=setup, title="PeerTrain models")
