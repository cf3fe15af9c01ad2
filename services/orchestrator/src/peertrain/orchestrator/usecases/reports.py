"""Peers' reports on their tasks (``accepted`` / ``progress`` / ``failed``) -> task events.

Reports are recorded together: the first report about a job opens a batch that takes
the job's reports for ``report_linger_s``, then appends all their events at once (one
append, not one per report). Each report's handler waits for its batch to be recorded,
so a message is acknowledged only once its event is in the log (a batch that fails
fails each of its messages, which the bus delivers again). A round of four peers made
eight appends of reports (each delivered to every instance's feed, and racing the
holder's appends on the job's stream); batched, they are one or two.

A report that ends a task's training (its last epoch's progress, a failure) has its
batch recorded at once: the peer's update follows it, and the job may close its round
and end on that update; its curve's last point must be in the log by then, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from peertrain.common.events import EventData, NewEvent
from peertrain.common.events.tasks import TaskFailedBody, TaskProgressBody
from peertrain.common.security import PeerMessage

from ..domain import Job
from ..domain.reports import decide_reports
from . import catchup
from .advance import advance, execute
from .streams import PRODUCER

if TYPE_CHECKING:
    from ..application import OrchestratorApp

__all__ = ["ReportBatch", "record_report"]

log = structlog.get_logger(__name__)


@dataclass
class ReportBatch:
    """One job's reports waiting to be recorded together."""

    messages: list[PeerMessage[Any]] = field(default_factory=list)
    recorded: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    """Done when the batch's events are appended (or failed with why they are not)."""
    now: asyncio.Event = field(default_factory=asyncio.Event)
    """Set to record the batch without waiting out the linger."""
    flush: asyncio.Task[None] | None = None


async def record_report(app: OrchestratorApp, message: PeerMessage[Any]) -> None:
    """Record a peer's report, with the job's others of the next ``report_linger_s``,
    if the task is its own; then advance the job (if this instance works on it: any
    instance records, the holder decides). Returns once the report is recorded."""
    linger = app.settings.report_linger_s
    job_id = message.body.job_id
    if linger <= 0:
        await _record(app, job_id, [message])
        return
    batch = app.reports.get(job_id)
    if batch is None:
        batch = app.reports[job_id] = ReportBatch()
        batch.flush = asyncio.create_task(_flush_later(app, job_id, batch, linger))
    batch.messages.append(message)
    if _ends_training(message.body):
        batch.now.set()
    await asyncio.shield(batch.recorded)


def _ends_training(body: object) -> bool:
    """A report after which the peer's update (or nothing) follows."""
    if isinstance(body, TaskProgressBody):
        return body.epoch >= body.epochs
    return isinstance(body, TaskFailedBody)


async def _flush_later(
    app: OrchestratorApp, job_id: str, batch: ReportBatch, linger: float
) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(batch.now.wait(), linger)
    if app.reports.get(job_id) is batch:
        del app.reports[job_id]  # reports from now on start the next batch
    try:
        await _record(app, job_id, batch.messages)
    except asyncio.CancelledError:  # shutting down: the messages are not acknowledged
        batch.recorded.cancel()
        raise
    except Exception as exc:  # each message's handler fails with it: redelivered
        batch.recorded.set_exception(exc)
    else:
        batch.recorded.set_result(None)


async def _record(app: OrchestratorApp, job_id: str, messages: Sequence[PeerMessage[Any]]) -> None:
    async with app.lock:
        job = app.jobs.get(job_id)
        unknown = job is None or not all(_sender_task(job, m) for m in messages)
        if unknown and (job is None or job.terminal is None):
            # another instance may have assigned it, and its event not be here yet
            job = await catchup.catch_up(app, job_id)
        reports = []
        for m in messages:
            if job is None or not _sender_task(job, m):
                log.warning(
                    "ignoring a message about a task that is not the sender's",
                    peer_id=m.peer_id,
                    task_id=m.body.task_id,
                    kind=m.kind,
                )
            else:
                reports.append((m.peer_id, m.body))
        if job is None or not reports:
            return

        def decide(j: Job) -> list[EventData | NewEvent]:
            return [
                NewEvent.of(event, producer=PRODUCER, actor=peer_id, correlation_id=job_id)
                for peer_id, event in decide_reports(j, reports)
            ]

        saved = await execute(app, job, decide)
        if app.leases.holds(job_id):
            await advance(app, saved.state)  # also after a redelivery: see catchup.fold


def _sender_task(job: Job, message: PeerMessage[Any]) -> bool:
    return job.task_of(message.body.task_id, message.peer_id) is not None
