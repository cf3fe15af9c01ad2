"""Wiring: the orchestrator's FastAPI app, subscriptions and deadline timer.

``<prefix>.facts``
    other services' events (peers, datasets, sharding, models) -> fold + decide.
``<prefix>.dispatch``
    ``task.assigned`` / ``job.cancelled`` -> messages to peers on ``peertrain.peers``.
``<prefix>.peers``
    peers' ``accepted`` / ``progress`` / ``failed`` telemetry -> task events.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

from peertrain.common.app import ServiceContext, create_app
from peertrain.common.bus import TELEMETRY
from peertrain.common.events.tasks import (
    ACCEPTED,
    FAILED,
    PROGRESS,
    TaskAcceptedBody,
    TaskFailedBody,
    TaskProgressBody,
)
from peertrain.common.events.training import JOB_CANCELLED, TASK_ASSIGNED
from peertrain.common.security import PeerMessage, install_security, peer_message_handler
from peertrain.common.tasks import Periodic

from .api import ROUTERS
from .api.deps import ORCHESTRATOR_EXTRA
from .config import OrchestratorSettings
from .service import FACT_TYPES, Orchestrator

__all__ = ["create_orchestrator_app", "setup_orchestrator"]


async def setup_orchestrator(ctx: ServiceContext, settings: OrchestratorSettings) -> Orchestrator:
    """Start-up: security, subscriptions (declared first), replay, deadline timer."""
    await install_security(ctx, queue=settings.queue("security"))
    orch = Orchestrator(ctx, settings)
    ctx.extras[ORCHESTRATOR_EXTRA] = orch

    async def on_peer(message: PeerMessage[Any]) -> None:
        await orch.on_peer_message(message)

    peers_queue = settings.queue("peers")
    kinds: dict[str, type[BaseModel]] = {
        ACCEPTED: TaskAcceptedBody,
        PROGRESS: TaskProgressBody,
        FAILED: TaskFailedBody,
    }
    ctx.subscriptions.add(settings.queue("facts"), FACT_TYPES, orch.on_fact)
    ctx.subscriptions.add(settings.queue("dispatch"), [TASK_ASSIGNED, JOB_CANCELLED], orch.dispatch)
    ctx.subscriptions.add_messages(
        peers_queue,
        [f"peer.*.{kind}" for kind in kinds],
        peer_message_handler(ctx, kinds, on_peer, queue=peers_queue),
        exchange=TELEMETRY,
    )
    # Queues first, then the replay: whatever is appended meanwhile waits in a queue,
    # and folding is idempotent, so the overlap is harmless.
    await ctx.subscriptions.declare(ctx.broker)
    await orch.replay()
    timer = Periodic("orchestrator-deadlines", settings.tick_s, orch.tick)
    timer.start()
    ctx.on_shutdown.append(timer.stop)
    return orch


def create_orchestrator_app(settings: OrchestratorSettings | None = None) -> FastAPI:
    """The orchestrator service."""
    settings = settings or OrchestratorSettings()

    async def setup(ctx: ServiceContext) -> None:
        await setup_orchestrator(ctx, settings)

    return create_app(settings, routers=ROUTERS, setup=setup, title="PeerTrain jobs")
