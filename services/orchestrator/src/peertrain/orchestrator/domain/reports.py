"""What a peer's report about its task (accepted, progress, failed) adds to the job.

Pure: the job and the report in, the job events to append out (none when the report
changes nothing: another peer's task, an ended job, a task already past that state, a
progress report for an epoch already reported or beyond the job's local epochs).
"""

from __future__ import annotations

from peertrain.common.events import EventData
from peertrain.common.events.tasks import TaskAcceptedBody, TaskFailedBody, TaskProgressBody
from peertrain.common.events.training import TaskAccepted, TaskFailed, TaskProgress

from .job import Job

__all__ = ["Report", "decide_report"]

Report = TaskAcceptedBody | TaskProgressBody | TaskFailedBody


def decide_report(job: Job, peer_id: str, body: Report) -> list[EventData]:
    """The event recording ``body``, sent by ``peer_id``, if it is news about its task."""
    task = job.task_of(body.task_id, peer_id)
    if task is None:
        return []
    if job.terminal is not None or task.shard != body.shard:
        return []
    common = {
        "job_id": job.job_id,
        "task_id": task.task_id,
        "round": task.round,
        "shard": task.shard,
        "peer_id": task.peer_id,
    }
    if isinstance(body, TaskAcceptedBody):
        if not task.acceptable:
            return []
        return [TaskAccepted(**common, device=body.device)]
    if isinstance(body, TaskProgressBody):
        # once per epoch of the job's own count, in order, while the task is open: a
        # peer cannot grow the log with progress (each report becomes an event)
        epochs = job.local_epochs
        if not task.open or body.epochs != epochs or not task.epoch < body.epoch <= epochs:
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
