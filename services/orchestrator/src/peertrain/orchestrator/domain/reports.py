"""What a peer's report about its task (accepted, progress, failed) adds to the job.

Pure: the job and the report in, the job events to append out (none when the report
changes nothing: another peer's task, an ended job, a task already past that state, a
progress report for an epoch already reported or beyond the job's local epochs; of a
report's earlier epochs, only those not recorded yet).

Reports are recorded several at a time (:func:`decide_reports`): each is decided on the
job as the reports before it in the batch leave it.
"""

from __future__ import annotations

from collections.abc import Sequence

from peertrain.common.events import EventData
from peertrain.common.events.tasks import (
    EpochReport,
    TaskAcceptedBody,
    TaskFailedBody,
    TaskProgressBody,
)
from peertrain.common.events.training import TaskAccepted, TaskFailed, TaskProgress

from .job import Job

__all__ = ["Report", "decide_report", "decide_reports"]

Report = TaskAcceptedBody | TaskProgressBody | TaskFailedBody


def decide_reports(job: Job, reports: Sequence[tuple[str, Report]]) -> list[tuple[str, EventData]]:
    """The events recording ``reports`` (sender, report), in order, each with its sender:
    a report is decided as if the events of the ones before it were on the job."""
    decided: list[tuple[str, EventData]] = []
    for peer_id, body in sorted(reports, key=_sent_order):  # as the peer sent them
        earlier = [e for _, e in decided if getattr(e, "task_id", None) == body.task_id]
        decided += [(peer_id, e) for e in decide_report(job, peer_id, body, earlier=earlier)]
    return decided


def _sent_order(report: tuple[str, Report]) -> tuple[int, int]:
    """A task's reports in the order its peer sends them (the bus may hand over a
    batch's reports in another): accepted, each epoch's progress, a failure."""
    body = report[1]
    if isinstance(body, TaskAcceptedBody):
        return (0, 0)
    return (1, body.epoch) if isinstance(body, TaskProgressBody) else (2, 0)


def decide_report(
    job: Job, peer_id: str, body: Report, *, earlier: Sequence[EventData] = ()
) -> list[EventData]:
    """The event recording ``body``, sent by ``peer_id``, if it is news about its task
    (``earlier``: the events about that task decided but not on the job yet)."""
    task = job.task_of(body.task_id, peer_id)
    if task is None:
        return []
    # an update accepted before its task's reports came (a task of a fraction of a
    # second, its reports recorded with others, maybe after the job's last round): they
    # still say which device trained it, and how each epoch went (the peers' curves)
    done = task.state == "updated"
    if (job.terminal is not None and not done) or task.shard != body.shard:
        return []
    if any(isinstance(e, TaskFailed) for e in earlier):
        return []  # no longer open
    news = task.acceptable or (done and task.device is None)
    accepted = news and not any(isinstance(e, TaskAccepted) for e in earlier)
    reported = task.epochs_reported | {
        each.epoch for e in earlier if isinstance(e, TaskProgress) for each in e.by_epoch()
    }
    common = {
        "job_id": job.job_id,
        "task_id": task.task_id,
        "round": task.round,
        "shard": task.shard,
        "peer_id": task.peer_id,
    }
    if isinstance(body, TaskAcceptedBody):
        if not accepted:
            return []
        return [TaskAccepted(**common, device=body.device)]
    if isinstance(body, TaskProgressBody):
        # once per epoch of the job's own count, while the task is open or its update
        # is in: a peer cannot grow the log with progress (each report becomes an
        # event). Not only in order: the bus may hand over a later epoch's first.
        # A report's earlier epochs that are recorded already, repeated, out of order or
        # not below its latest are left out; the latest decides whether it is news.
        epochs = job.local_epochs
        if (
            not (task.open or done)
            or body.epochs != epochs
            or not 1 <= body.epoch <= epochs
            or body.epoch in reported
        ):
            return []
        kept: list[EpochReport] = []
        for epoch in body.earlier:
            after = kept[-1].epoch if kept else 0
            if after < epoch.epoch < body.epoch and epoch.epoch not in reported:
                kept.append(epoch)
        return [
            TaskProgress(
                **common,
                epoch=body.epoch,
                epochs=body.epochs,
                loss=body.loss,
                accuracy=body.accuracy,
                samples=body.samples,
                duration_s=body.duration_s,
                earlier=tuple(kept),
            )
        ]
    if isinstance(body, TaskFailedBody) and task.open:
        return [TaskFailed(**common, error=body.error, traceback=body.traceback)]
    return []
