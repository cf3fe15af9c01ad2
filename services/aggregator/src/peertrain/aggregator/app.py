"""Wiring: the aggregator's FastAPI app on the common app factory."""

from __future__ import annotations

import asyncio

import structlog
from fastapi import FastAPI

from peertrain.common.app import Ports, ServiceContext, create_app, subscribe
from peertrain.common.bus import retire_queues
from peertrain.common.clock import SYSTEM_CLOCK
from peertrain.common.leases import leases_for
from peertrain.common.periodic import Periodic
from peertrain.common.security import install_security

from .api import ROUTERS
from .application import AGGREGATOR_SUBSCRIPTIONS, AggregatorApp
from .config import AggregatorSettings
from .usecases.holding import find_active

__all__ = ["create_aggregator_app", "setup_aggregator"]

log = structlog.get_logger(__name__)


async def setup_aggregator(ctx: ServiceContext, settings: AggregatorSettings) -> AggregatorApp:
    """Start-up: token verification, scratch space, subscriptions, active jobs, leases."""
    await install_security(ctx, queue=settings.queue("security"))
    ports = Ports(
        log=ctx.log, blobs=ctx.blobs, clock=SYSTEM_CLOCK, leases=leases_for(ctx.db, settings)
    )
    app = AggregatorApp(ports, settings)
    await asyncio.to_thread(settings.work_dir.mkdir, parents=True, exist_ok=True)
    subscribe(ctx, app, AGGREGATOR_SUBSCRIPTIONS, settings)
    ctx.application = app
    # the shared jobs queue of versions before leases (each instance has its own now)
    await retire_queues(settings.amqp_url.get_secret_value(), [settings.queue("jobs")])
    # the queue first, then the log: what is appended meanwhile waits in the queue
    await ctx.subscriptions.declare(ctx.broker)
    active = await find_active(app)
    log.info("active jobs found", jobs=active)

    async def on_tick() -> None:
        try:
            await app.tick()
        except Exception as exc:  # the store blinked: held leases run out on their own
            log.warning("renewing leases failed", error=repr(exc))

    timer = Periodic("aggregator-leases", settings.tick_s, on_tick)
    timer.start()
    ctx.on_shutdown.append(app.leases.release_all)  # runs after the timer stopped
    ctx.on_shutdown.append(timer.stop)
    return app


def create_aggregator_app(settings: AggregatorSettings | None = None) -> FastAPI:
    """The aggregator service."""
    settings = settings or AggregatorSettings()

    async def setup(ctx: ServiceContext) -> None:
        await setup_aggregator(ctx, settings)

    return create_app(settings, routers=ROUTERS, setup=setup, title="PeerTrain models")
