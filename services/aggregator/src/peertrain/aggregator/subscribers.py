"""The aggregator's subscriptions.

``<prefix>.jobs`` (``peertrain.events``)
    the orchestrator's job events -> :func:`reconcile`: v0 on ``job.configured``,
    v<r> + evaluation on ``round.closed``, the export after the last round. Idempotent
    by construction: the work is decided from the log, which says what is done.
``<prefix>.updates`` (``peertrain.telemetry``, ``peer.*.update``)
    peers' announced updates, verified (token and sender) -> :func:`receive_update`.
"""

from __future__ import annotations

from peertrain.common.app import ServiceContext
from peertrain.common.bus import TELEMETRY
from peertrain.common.events import RecordedEvent
from peertrain.common.events.tasks import UpdateAnnounced
from peertrain.common.events.training import (
    JOB_CANCELLED,
    JOB_CONFIGURED,
    JOB_FAILED,
    PEER_EXCLUDED,
    ROUND_CLOSED,
    ROUND_OPENED,
    TASK_ASSIGNED,
    TASK_LOST,
)
from peertrain.common.security import PeerMessage, peer_message_handler

from .usecases import AggregatorContext
from .usecases.updates import receive_update
from .usecases.versions import reconcile

__all__ = ["JOB_EVENTS", "subscribe"]

JOB_EVENTS = (
    JOB_CONFIGURED,
    ROUND_OPENED,
    TASK_ASSIGNED,
    TASK_LOST,
    ROUND_CLOSED,
    JOB_CANCELLED,
    JOB_FAILED,
    PEER_EXCLUDED,
)


def subscribe(ctx: ServiceContext, actx: AggregatorContext) -> None:
    """Register the service's subscriptions on the context."""
    settings = actx.settings

    async def on_job_event(event: RecordedEvent) -> None:
        job_id = getattr(event.data, "job_id", None)
        if not isinstance(job_id, str):
            return
        async with actx.lock(job_id):
            state = await actx.load(job_id, event)
            await reconcile(actx, state, event)

    async def on_update(message: PeerMessage[UpdateAnnounced]) -> None:
        await receive_update(actx, message)

    updates = settings.queue("updates")
    ctx.subscriptions.add(settings.queue("jobs"), JOB_EVENTS, on_job_event)
    ctx.subscriptions.add_messages(
        updates,
        ["peer.*.update"],
        peer_message_handler(ctx, {"update": UpdateAnnounced}, on_update, queue=updates),  # type: ignore[arg-type]
        exchange=TELEMETRY,
    )
