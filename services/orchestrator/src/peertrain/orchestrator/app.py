"""Wiring: the orchestrator's FastAPI app, subscriptions, replay and deadline timer."""

from __future__ import annotations

from fastapi import FastAPI

from peertrain.common.app import ServiceContext, create_app
from peertrain.common.bus import retire_queues
from peertrain.common.periodic import Periodic
from peertrain.common.security import install_security

from . import subscribers
from .api import ROUTERS
from .api.deps import ORCHESTRATOR_EXTRA
from .config import OrchestratorSettings
from .usecases import OrchestratorContext
from .usecases.advance import replay, tick

__all__ = ["create_orchestrator_app", "setup_orchestrator"]


async def setup_orchestrator(
    ctx: ServiceContext, settings: OrchestratorSettings
) -> OrchestratorContext:
    """Start-up: security, subscriptions (declared first), replay, deadline timer."""
    await install_security(ctx, queue=settings.queue("security"))
    octx = OrchestratorContext(ctx, settings)
    ctx.extras[ORCHESTRATOR_EXTRA] = octx
    subscribers.subscribe(ctx, octx)
    # the shared facts queue of versions before leases (each instance has its own now)
    await retire_queues(settings.amqp_url.get_secret_value(), [settings.queue("facts")])
    # Queues first, then the replay: whatever is appended meanwhile waits in a queue,
    # and folding is idempotent, so the overlap is harmless.
    await ctx.subscriptions.declare(ctx.broker)
    await replay(octx)

    async def on_tick() -> None:
        await tick(octx)

    timer = Periodic("orchestrator-deadlines", settings.tick_s, on_tick)
    timer.start()
    ctx.on_shutdown.append(octx.leases.release_all)  # runs after the timer stopped
    ctx.on_shutdown.append(timer.stop)
    return octx


def create_orchestrator_app(settings: OrchestratorSettings | None = None) -> FastAPI:
    """The orchestrator service."""
    settings = settings or OrchestratorSettings()

    async def setup(ctx: ServiceContext) -> None:
        await setup_orchestrator(ctx, settings)

    return create_app(settings, routers=ROUTERS, setup=setup, title="PeerTrain jobs")
