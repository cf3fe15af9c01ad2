"""Peers' reports on their tasks (``accepted`` / ``progress`` / ``failed``) -> task events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from peertrain.common.security import PeerMessage

from ..domain.reports import decide_report
from . import catchup
from .advance import advance, execute

if TYPE_CHECKING:
    from ..application import OrchestratorApp

__all__ = ["record_report"]

log = structlog.get_logger(__name__)


async def record_report(app: OrchestratorApp, message: PeerMessage[Any]) -> None:
    """Record a peer's report if the task is its own, then advance the job (if this
    instance works on it: any instance records, the holder decides)."""
    body = message.body
    async with app.lock:
        job = app.jobs.get(body.job_id)
        task = job.task_of(body.task_id, message.peer_id) if job is not None else None
        if task is None and (job is None or job.terminal is None):
            # another instance may have assigned it, and its event not be here yet
            job = await catchup.catch_up(app, body.job_id)
            task = job.task_of(body.task_id, message.peer_id) if job is not None else None
        if job is None or task is None:
            log.warning(
                "ignoring a message about a task that is not the sender's",
                peer_id=message.peer_id,
                task_id=body.task_id,
                kind=message.kind,
            )
            return
        saved = await execute(
            app, job, lambda j: decide_report(j, message.peer_id, body), actor=message.peer_id
        )
        if app.leases.holds(job.job_id):
            await advance(app, saved.state)  # also after a redelivery: see catchup.fold
