"""What a peer's report about its task (accepted, progress, failed) adds to the job.

Pure: the job and the report in, the job events to append out (none when the report
changes nothing: another peer's task, an ended job, a task already past that state, a
progress report for an epoch already reported or beyond the job's local epochs).

Reports are recorded several at a time (:func:`decide_reports`): each is decided on the
job as the reports before it in the batch leave it.
"""

from __future__ import annotations

from collections.abc import Sequence

from peertrain.common.events import EventData
from peertrain.common.events.tasks import TaskAcceptedBody, TaskFailedBody, TaskProgressBody
from peertrain.common.events.training import TaskAccepted, TaskFailed, TaskProgress

from .job import Job

__all__ = ["Report", "decide_report", "decide_reports"]

Report = TaskAcceptedBody | TaskProgressBody | TaskFailedBody


def decide_reports(job: Job, reports: Sequence[tuple[str, Report]]) -> list[tuple[str, EventData]]:
    """The events recording ``reports`` (sender, report), in order, each with its sender:
    a report is decided as if the events of the ones before it were on the job."""
    decided: list[tuple[str, EventData]] = []
    for peer_id, body in reports:
        earlier = [e for _, e in decided if getattr(e, "task_id", None) == body.task_id]
        decided += [(peer_id, e) for e in decide_report(job, peer_id, body, earlier=earlier)]
    return decided


def decide_report(
    job: Job, peer_id: str, body: Report, *, earlier: Sequence[EventData] = ()
) -> list[EventData]:
    """The event recording ``body``, sent by ``peer_id``, if it is news about its task
    (``earlier``: the events about that task decided but not on the job yet)."""
    task = job.task_of(body.task_id, peer_id)
    if task is None:
        return []
    if job.terminal is not None or task.shard != body.shard:
        return []
    if any(isinstance(e, TaskFailed) for e in earlier):
        return []  # no longer open
    # an update accepted before its task's report came (a task of a fraction of a
    # second, its report recorded with others) still says which device trained it
    news = task.acceptable or (task.state == "updated" and task.device is None)
    accepted = news and not any(isinstance(e, TaskAccepted) for e in earlier)
    epoch = max([task.epoch, *(e.epoch for e in earlier if isinstance(e, TaskProgress))])
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
        # once per epoch of the job's own count, in order, while the task is open: a
        # peer cannot grow the log with progress (each report becomes an event)
        epochs = job.local_epochs
        if not task.open or body.epochs != epochs or not epoch < body.epoch <= epochs:
            return []
        return [
            TaskProgress(
                **common,
                epoch=body.epoch,
                epochs=body.epochs,
                loss=body.loss,
                accuracy=body.accuracy,
                samples=body.samples,
                duration_s=body.duration_s,
            )
        ]
    if isinstance(body, TaskFailedBody) and task.open:
        return [TaskFailed(**common, error=body.error, traceback=body.traceback)]
    return []
