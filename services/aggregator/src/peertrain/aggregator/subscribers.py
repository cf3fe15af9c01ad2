"""The aggregator's subscriptions.

``<prefix>.feed.<instance>`` (``peertrain.events``)
    the orchestrator's job events, on a queue of this instance's own (every instance
    hears them all). Those in :data:`JOB_EVENTS` -> :func:`on_job_event`, which
    reconciles the jobs this instance holds: v0 on ``job.configured``, v<r> +
    evaluation on ``round.closed``, the export after the last round. Idempotent by
    construction: the work is decided from the log, which says what is done. The
    others (a task accepted, its progress, ...) -> :func:`fold_job_event`: folded into
    the job's cached state, which then follows the job stream without reading it.
``<prefix>.updates`` (``peertrain.telemetry``, ``peer.*.update``)
    peers' announced updates, verified (token and sender) -> :func:`receive_update`.
"""

from __future__ import annotations

from peertrain.common.app import ServiceContext
from peertrain.common.bus import TELEMETRY, dlq_name
from peertrain.common.events import RecordedEvent
from peertrain.common.events.tasks import UpdateAnnounced
from peertrain.common.events.training import (
    JOB_CANCELLED,
    JOB_COMPLETED,
    JOB_CONFIGURED,
    JOB_EVENT_TYPES,
    JOB_FAILED,
    PEER_EXCLUDED,
    ROUND_CLOSED,
    ROUND_OPENED,
    TASK_ASSIGNED,
    TASK_LOST,
)
from peertrain.common.security import PeerMessage, peer_message_handler

from .usecases import AggregatorContext
from .usecases.holding import fold_job_event, on_job_event
from .usecases.updates import receive_update

__all__ = ["JOB_EVENTS", "subscribe"]

JOB_EVENTS = (
    JOB_CONFIGURED,
    ROUND_OPENED,
    TASK_ASSIGNED,
    TASK_LOST,
    ROUND_CLOSED,
    JOB_CANCELLED,
    JOB_FAILED,
    JOB_COMPLETED,
    PEER_EXCLUDED,
)
"""The job events the aggregator acts on; it hears every job event (``JOB_EVENT_TYPES``)."""


def subscribe(ctx: ServiceContext, actx: AggregatorContext) -> None:
    """Register the service's subscriptions on the context."""
    settings = actx.settings

    async def on_event(event: RecordedEvent) -> None:
        job_id = getattr(event.data, "job_id", None)
        if not isinstance(job_id, str):
            return
        if event.type in JOB_EVENTS:
            await on_job_event(actx, job_id, event)
        else:
            await fold_job_event(actx, job_id, event)

    async def on_update(message: PeerMessage[UpdateAnnounced]) -> None:
        await receive_update(actx, message)

    updates = settings.queue("updates")
    ctx.subscriptions.add(
        settings.queue(f"feed.{settings.instance_name}"),
        JOB_EVENT_TYPES,
        on_event,
        expires_s=settings.feed_expires_s,
        dead_letters=dlq_name(settings.queue("feed")),  # shared: outlives every instance
    )
    ctx.subscriptions.add_messages(
        updates,
        ["peer.*.update"],
        peer_message_handler(ctx, {"update": UpdateAnnounced}, on_update, queue=updates),  # type: ignore[arg-type]
        exchange=TELEMETRY,
    )
