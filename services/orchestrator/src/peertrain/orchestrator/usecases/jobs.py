"""Users' jobs: create, cancel, read (what the routes call)."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from peertrain.common.eventlog import ConcurrencyError
from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import sharding_stream
from peertrain.common.events.models import model_stream
from peertrain.common.events.training import JobCreated, job_stream
from peertrain.common.events.weights import weights_stream
from peertrain.common.ids import new_id
from peertrain.common.security import Principal
from peertrain.common.specs import ModelSummary, model_summary

from ..domain import Job
from ..domain.errors import DatasetNotFound, JobNotFound
from ..domain.job import decide_cancel
from ..domain.job_request import JobRequest
from ..domain.request import check_running_quota, plan_job
from . import catchup
from .advance import execute, gauge

if TYPE_CHECKING:
    from ..application import OrchestratorApp

__all__ = [
    "JobQuery",
    "cancel_job",
    "check_job",
    "create_job",
    "get_job",
    "job_events",
    "job_model",
    "open_job",
    "read_job",
    "visible_jobs",
]

DRY_RUN_ID = "dry-run"


def get_job(app: OrchestratorApp, job_id: str, who: Principal) -> Job:
    """A job the caller may see (its owner, or an admin)."""
    job = app.jobs.get(job_id)
    if job is None or not job.visible_to(who):
        raise JobNotFound(f"no job {job_id!r}")
    return job


async def read_job(app: OrchestratorApp, job_id: str, who: Principal) -> Job:
    """A job the caller may see, as its streams hold it now (never waiting on the lock
    that decisions and lease renewal take: see :func:`~.catchup.read_on`).

    Every instance answers reads and folds every job from its own feed, which can lag
    behind the one that answered the caller's last read: reading on from the log first
    (two indexed reads) means a job seen completed never shows a round it has not
    folded yet.
    """
    return await catchup.read_on(app, get_job(app, job_id, who))


def job_model(app: OrchestratorApp, job: Job) -> ModelSummary:
    """The job's model as built for its data: every layer, its output shape and size.

    The data's feature spec is the one the job was configured with, or before that the
    dataset's (the one the job was checked against).

    Raises
    ------
    DatasetNotFound
        Before the job is configured, when its dataset is no longer known.
    """
    created = job.created
    assert created is not None
    if job.configured is not None:
        features = job.configured.feature_spec.data_shape
    else:
        ds = app.directory.datasets.get(created.dataset_id)
        if ds is None or ds.feature_spec is None:
            raise DatasetNotFound(f"job {job.job_id!r}: no dataset {created.dataset_id!r}")
        features = ds.feature_spec.data_shape
    return model_summary(created.model, features)


@dataclass(frozen=True)
class JobQuery:
    """Which jobs a listing keeps: in ``state``, of dataset ``dataset_id``, and with
    ``name`` in their name (case-insensitive); ``None`` keeps all."""

    state: str | None = None
    dataset_id: str | None = None
    name: str | None = None

    def matches(self, job: Job) -> bool:
        """Whether ``job`` passes every filter given."""
        created = job.created
        if created is None:
            return False
        if self.state is not None and job.state != self.state:
            return False
        if self.dataset_id is not None and created.dataset_id != self.dataset_id:
            return False
        return self.name is None or self.name.lower() in created.name.lower()


def visible_jobs(app: OrchestratorApp, who: Principal, query: JobQuery | None = None) -> list[Job]:
    """The caller's jobs (all of them for an admin) that ``query`` keeps, newest first."""
    keep = query or JobQuery()
    jobs = [j for j in app.jobs.values() if j.visible_to(who) and keep.matches(j)]
    return sorted(jobs, key=lambda j: j.created_at or app.clock.now(), reverse=True)


async def _known_weights(app: OrchestratorApp, request: JobRequest) -> None:
    """Uploaded weights the job names, read from the log when the directory has not
    heard of them yet: an upload answered 201 once its event was appended, and a client
    creates the job at once, often before that event reached this instance's queue."""
    weights_id = request.init_weights
    if weights_id is None or weights_id in app.directory.weights:
        return
    for event in await app.log.read_stream(weights_stream(weights_id)):
        app.directory.apply(event)


async def check_job(app: OrchestratorApp, request: JobRequest, who: Principal) -> JobCreated:
    """Every check :func:`create_job` makes, and nothing else: no job, no event (a dry
    run). Answers the ``job.created`` it would append (its job id is a placeholder)."""
    await _known_weights(app, request)
    async with app.lock:
        check_running_quota(app.jobs.values(), who, app.settings.max_running_jobs)
        return plan_job(DRY_RUN_ID, request, who, app.directory, app.jobs)


async def create_job(app: OrchestratorApp, request: JobRequest, who: Principal) -> Job:
    """Check and create a job (``job.created``); sharding starts from that event."""
    await _known_weights(app, request)
    async with app.lock:
        check_running_quota(app.jobs.values(), who, app.settings.max_running_jobs)
        created = plan_job(new_id(), request, who, app.directory, app.jobs)
        return await open_job(app, created, actor=who.subject)


async def open_job(app: OrchestratorApp, created: JobCreated, *, actor: str | None) -> Job:
    """Append a checked and planned job's ``job.created`` (the caller holds the lock);
    sharding starts from that event."""
    job = Job(created.job_id)
    app.jobs[created.job_id] = job
    try:
        await execute(app, job, lambda _: [created], actor=actor, retries=0)
    except Exception:
        app.jobs.pop(created.job_id, None)
        raise
    gauge(app)
    return job


COMMAND_PATIENCE_S = 10.0
"""How long a user's command on a running job (a cancel) keeps deciding again while
another instance appends to the job: a busy job is no reason to refuse it."""


async def cancel_job(app: OrchestratorApp, job_id: str, who: Principal) -> Job:
    """Cancel a running job; its peers are told to stop.

    The instance holding the job may append to it several times a second (a round
    takes a quarter of one), so this one's append can lose every try of a
    :meth:`~peertrain.common.eventlog.Repository.execute`: it then tries again, after a
    growing pause with the job's lock released, for up to :data:`COMMAND_PATIENCE_S`
    (it answered ``409 concurrency_conflict`` before).
    """
    deadline = time.monotonic() + COMMAND_PATIENCE_S
    pause = 0.02
    while True:
        async with app.lock:
            job = get_job(app, job_id, who)
            try:
                saved = await execute(
                    app, job, lambda j: decide_cancel(j, who.subject), actor=who.subject
                )
            except ConcurrencyError:
                if time.monotonic() + pause > deadline:
                    raise
            else:
                gauge(app)
                return saved.state
        await asyncio.sleep(random.uniform(pause / 2, pause))
        pause = min(2 * pause, 0.5)


async def job_events(app: OrchestratorApp, job: Job) -> list[RecordedEvent]:
    """The job's lineage: its own, sharding and model events, in log order."""
    found: list[RecordedEvent] = []
    for stream in (job_stream(job.job_id), sharding_stream(job.job_id), model_stream(job.job_id)):
        found += await app.log.read_stream(stream)
    return sorted(found, key=lambda e: e.position)
