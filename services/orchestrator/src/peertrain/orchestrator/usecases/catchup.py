"""Catching up: the orchestrator's read of the log into its jobs and directory.

Both are folded in memory (:class:`~.domain.Directory`, :class:`~.domain.Job`: pure
folds that remember what they applied), from the bus as facts and job events arrive
(:func:`follow`: every instance hears everything, on a queue of its own) and from the
whole log at start-up (:func:`replay`), so replaying and consuming may overlap freely.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import TYPE_CHECKING

from peertrain.common.eventlog import Cached, Loaded
from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import (
    DATASET_DELETED,
    DATASET_REJECTED,
    DATASET_SHARDED,
    DATASET_SHARDING_FAILED,
    DATASET_UPLOADED,
    DATASET_VALIDATED,
)
from peertrain.common.events.models import MODEL_EVENT_TYPES, UpdateAccepted
from peertrain.common.events.peers import PEER_EVENT_TYPES
from peertrain.common.events.training import JOB_EVENT_TYPES, job_stream
from peertrain.common.events.weights import WEIGHTS_EVENT_TYPES

from ..domain import Job

if TYPE_CHECKING:
    from ..application import OrchestratorApp

__all__ = ["FACT_TYPES", "catch_up", "fold", "follow", "read_on", "replay", "seen"]

DATASET_TYPES = (DATASET_UPLOADED, DATASET_VALIDATED, DATASET_REJECTED, DATASET_DELETED)
FACT_TYPES: tuple[str, ...] = (
    *PEER_EVENT_TYPES,
    *DATASET_TYPES,
    DATASET_SHARDED,
    DATASET_SHARDING_FAILED,
    *MODEL_EVENT_TYPES,
    *WEIGHTS_EVENT_TYPES,
)
"""What other services append that the orchestrator acts on."""


def _job_id_of(event: RecordedEvent) -> str | None:
    kind, _, rest = event.stream.partition(":")
    return rest if kind in ("job", "model", "sharding") else None


def fold(app: OrchestratorApp, event: RecordedEvent) -> Job | None:
    """Fold ``event`` in; the job it concerns, whether or not it was new to it.

    A redelivered fact was folded the first time, but what it should have caused may
    not have been appended (the store blinked): the caller decides again either way,
    and deciding is idempotent.
    """
    if app.directory.apply(event):
        return None
    job_id = _job_id_of(event)
    if job_id is None:
        return None
    job = app.jobs.get(job_id)
    if job is None:
        if not event.stream.startswith("job:"):
            return None  # facts of jobs created elsewhere (tests sharing a log)
        job = app.jobs[job_id] = Job(job_id)
    if job.apply(event) and isinstance(event.data, UpdateAccepted):
        _measure(app, job, event.data, event.occurred_at)
    return job


def _after_gap(job: Job, event: RecordedEvent) -> bool:
    """Whether ``event`` skips events of its stream that ``job`` has not seen."""
    if event.stream.startswith("job:"):
        return event.seq > job.version + 1
    if event.stream.startswith("model:"):
        return event.seq > job.model_seq + 1
    return False


async def follow(app: OrchestratorApp, event: RecordedEvent) -> Job | None:
    """:func:`fold` for an event from the bus. Several writers append to a job's stream
    and each relays its own events, so one may arrive before an earlier one (or that
    one was lost with this instance's queue): after a gap the job reads on from the
    log instead, and the late event is then a duplicate."""
    job_id = _job_id_of(event)
    job = app.jobs.get(job_id) if job_id is not None else None
    if job_id is not None and job is not None and _after_gap(job, event):
        return await catch_up(app, job_id)
    return fold(app, event)


async def seen(app: OrchestratorApp, event: RecordedEvent, job_id: str) -> Job | None:
    """The job, having folded ``event`` of its stream (read on from the log if this
    instance has not got that far: another one appended it)."""
    job = app.jobs.get(job_id)
    if job is None or job.version < event.seq:
        return await catch_up(app, job_id)
    return job


async def catch_up(app: OrchestratorApp, job_id: str) -> Job | None:
    """The job with all that its streams hold (read on from what it has folded);
    ``None`` if the log has no such job.

    What follows is folded in log order (by position) across the job's streams, as the
    bus delivers it: an update accepted before its round closed counts in that round.
    """
    stream = job_stream(job_id)
    job = app.jobs.get(job_id)
    if job is None:  # a first load folds every stream of the job, in log order
        job = (await app.repository.load(stream)).state
        return job if job.created is not None else None
    for event in await _unfolded(app, job):
        job.apply(event)
    app.repository.cache.put(stream, Cached(job, job.version))  # read on: not stale
    return None if job.created is None else job


async def _unfolded(app: OrchestratorApp, job: Job) -> list[RecordedEvent]:
    """What the job's streams hold past what ``job`` has folded, in log order."""
    stream = job_stream(job.job_id)
    return await app.repository.unfolded(Loaded(stream, job, job.version))


async def read_on(app: OrchestratorApp, job: Job) -> Job:
    """``job`` with all that its streams hold, for a reader, without the lock.

    Reads never wait on :attr:`~..application.OrchestratorApp.lock`, which deciding,
    deadlines and lease renewal need: a read held up by a slow store must not hold
    them up. The log is read without it; what was read is folded in one synchronous
    step, in log order, skipping what the job has folded meanwhile (every fold is
    idempotent). Into the job itself when no decision is in flight (the lock is free:
    nothing can be between its reads and its append), else into a copy, which the
    reader gets: a decision never sees its job change under it.
    """
    unfolded = await _unfolded(app, job)
    if not unfolded:
        return job
    current = app.jobs.get(job.job_id, job)
    target = copy.deepcopy(current) if app.lock.locked() else current
    for event in unfolded:
        target.apply(event)
    if target is current:
        app.repository.cache.put(job_stream(job.job_id), Cached(current, current.version))
    return target


def _measure(app: OrchestratorApp, job: Job, accepted: UpdateAccepted, at: datetime) -> None:
    """The peer's training speed, as the platform saw it (see ``PeerInfo.observe``)."""
    task = job.find_task(accepted.task_id)
    peer = app.directory.peers.get(accepted.peer_id)
    plan = job.shard_plan(accepted.shard)
    if task is not None and peer is not None and plan:
        peer.observe(plan.rows, (at - task.assigned_at).total_seconds())


async def replay(app: OrchestratorApp) -> int:
    """Fold the whole log (facts and job events) in; the number of events read."""
    count = 0
    async for event in app.log.read_all(types=(*FACT_TYPES, *JOB_EVENT_TYPES)):
        fold(app, event)
        count += 1
    return count
