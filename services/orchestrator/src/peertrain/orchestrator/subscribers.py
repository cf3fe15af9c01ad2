"""The orchestrator's subscriptions.

``<prefix>.feed.<instance>``
    other services' events (peers, datasets, sharding, models) and every job event,
    on a queue of this instance's own (every instance hears everything) -> fold, and
    decide for the jobs it holds.
``<prefix>.dispatch``
    ``task.assigned`` / ``job.cancelled`` -> messages to peers on ``peertrain.peers``.
``<prefix>.peers``
    peers' ``accepted`` / ``progress`` / ``failed`` telemetry -> task events.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from peertrain.common.app import ServiceContext
from peertrain.common.bus import TELEMETRY, dlq_name
from peertrain.common.events import RecordedEvent
from peertrain.common.events.tasks import (
    ACCEPTED,
    FAILED,
    PROGRESS,
    TaskAcceptedBody,
    TaskFailedBody,
    TaskProgressBody,
)
from peertrain.common.events.training import JOB_CANCELLED, JOB_EVENT_TYPES, TASK_ASSIGNED
from peertrain.common.security import PeerMessage, peer_message_handler

from .projections import FACT_TYPES
from .usecases import OrchestratorContext
from .usecases.advance import on_fact
from .usecases.dispatch import dispatch
from .usecases.reports import record_report

__all__ = ["subscribe"]


def subscribe(ctx: ServiceContext, octx: OrchestratorContext) -> None:
    """Register the service's subscriptions on the context."""
    settings = octx.settings

    async def on_event(event: RecordedEvent) -> None:
        await on_fact(octx, event)

    async def on_dispatch(event: RecordedEvent) -> None:
        await dispatch(octx, event)

    async def on_peer(message: PeerMessage[Any]) -> None:
        await record_report(octx, message)

    peers_queue = settings.queue("peers")
    kinds: dict[str, type[BaseModel]] = {
        ACCEPTED: TaskAcceptedBody,
        PROGRESS: TaskProgressBody,
        FAILED: TaskFailedBody,
    }
    ctx.subscriptions.add(
        settings.queue(f"feed.{settings.instance_name}"),
        [*FACT_TYPES, *JOB_EVENT_TYPES],
        on_event,
        expires_s=settings.feed_expires_s,
        dead_letters=dlq_name(settings.queue("feed")),  # shared: outlives every instance
    )
    ctx.subscriptions.add(settings.queue("dispatch"), [TASK_ASSIGNED, JOB_CANCELLED], on_dispatch)
    ctx.subscriptions.add_messages(
        peers_queue,
        [f"peer.*.{kind}" for kind in kinds],
        peer_message_handler(ctx, kinds, on_peer, queue=peers_queue),
        exchange=TELEMETRY,
    )
