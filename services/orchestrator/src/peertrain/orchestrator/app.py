"""Wiring: the orchestrator's FastAPI app, subscriptions, replay and deadline timer."""

from __future__ import annotations

from fastapi import FastAPI

from peertrain.common.app import BrokerPublisher, Ports, ServiceContext, create_app, subscribe
from peertrain.common.bus import retire_queues
from peertrain.common.clock import SYSTEM_CLOCK
from peertrain.common.leases import leases_for
from peertrain.common.periodic import Periodic
from peertrain.common.security import install_security

from .api import ROUTERS
from .application import ORCHESTRATOR_SUBSCRIPTIONS, OrchestratorApp
from .config import OrchestratorSettings

__all__ = ["create_orchestrator_app", "setup_orchestrator"]


async def setup_orchestrator(
    ctx: ServiceContext, settings: OrchestratorSettings
) -> OrchestratorApp:
    """Start-up: security, subscriptions (declared first), replay, deadline timer."""
    await install_security(ctx, queue=settings.queue("security"))
    assert ctx.blobs is not None
    ports = Ports(
        log=ctx.log,
        blobs=ctx.blobs,
        clock=SYSTEM_CLOCK,
        publisher=BrokerPublisher(ctx.broker),
        leases=leases_for(ctx.db, settings),
    )
    app = OrchestratorApp(ports, settings)
    ctx.application = app
    subscribe(ctx, app, ORCHESTRATOR_SUBSCRIPTIONS, settings)
    # the shared facts queue of versions before leases (each instance has its own now)
    await retire_queues(settings.amqp_url.get_secret_value(), [settings.queue("facts")])
    # Queues first, then the replay: whatever is appended meanwhile waits in a queue,
    # and folding is idempotent, so the overlap is harmless.
    await ctx.subscriptions.declare(ctx.broker)
    await app.replay()

    timer = Periodic("orchestrator-deadlines", settings.tick_s, app.tick)
    timer.start()
    ctx.on_shutdown.append(app.leases.release_all)  # runs after the timer stopped
    ctx.on_shutdown.append(timer.stop)
    return app


def create_orchestrator_app(settings: OrchestratorSettings | None = None) -> FastAPI:
    """The orchestrator service."""
    settings = settings or OrchestratorSettings()

    async def setup(ctx: ServiceContext) -> None:
        await setup_orchestrator(ctx, settings)

    return create_app(settings, routers=ROUTERS, setup=setup, title="PeerTrain jobs")
