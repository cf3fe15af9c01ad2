"""Moving jobs on: decide (pure), append, observe; after facts, on the clock, at start-up.

Decisions come from :func:`~peertrain.orchestrator.domain.reconcile`, run after every
fact and on a timer (deadlines), always under the context's lock, and only for the
jobs whose lease this instance holds (:mod:`peertrain.common.leases`): the timer also
renews the leases and takes over the jobs of instances that stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial

import structlog

from peertrain.common.eventlog import Saved
from peertrain.common.events import EventData, RecordedEvent
from peertrain.common.events.training import RoundClosed, RoundFailed, TaskAssigned, job_stream

from .. import projections
from ..domain import Env, Job, reconcile
from ..domain.job import decide_configured
from ..metrics import JOBS, JOBS_FINISHED, ROUND_DURATION, ROUND_PEERS, ROUNDS_CLOSED, TASKS
from .configure import write_configuration
from .context import OrchestratorContext
from .dispatch import dispatch_soon

__all__ = ["DecideJob", "advance", "execute", "gauge", "on_fact", "replay", "tick"]

log = structlog.get_logger(__name__)

MAX_STEPS = 20

DecideJob = Callable[[Job], Sequence[EventData]]


def _now() -> datetime:
    return datetime.now(UTC)


async def replay(octx: OrchestratorContext) -> None:
    """Rebuild the projections and every job from the log, then catch up on the jobs
    this instance takes."""
    async with octx.lock:
        count = await projections.replay(octx)
        await _keep_leases(octx)
        for job in octx.jobs.values():
            if job.terminal is None and octx.leases.holds(job.job_id):
                await advance(octx, job)
        gauge(octx)
    octx.ready = True
    log.info("replayed the log", events=count, jobs=len(octx.jobs))


async def on_fact(octx: OrchestratorContext, event: RecordedEvent) -> None:
    """An event from the bus (another service's, or a job's): fold it and advance
    what it concerns, if this instance works on that."""
    async with octx.lock:
        if octx.directory.apply(event):
            if event.stream.startswith("peer:"):
                peer_id = event.stream.partition(":")[2]
                for job in [j for j in octx.jobs.values() if j.runs_with(peer_id)]:
                    if octx.leases.holds(job.job_id):
                        await advance(octx, job)
            return
        known = octx.jobs.get(event.stream.partition(":")[2])
        if known is not None and event.stream.startswith("job:") and event.seq <= known.version:
            return  # this instance appended it (or folded it already)
        touched = await projections.follow(octx, event)
        if touched is None:
            return
        async with octx.folded:
            octx.folded.notify_all()
        if touched.terminal is not None:
            gauge(octx)
        elif await octx.leases.claim(touched.job_id):
            await advance(octx, touched)


async def tick(octx: OrchestratorContext) -> None:
    """Leases, deadlines, and anything a failed append left undecided: advance every
    job of this instance's that has not ended (deciding is pure and idempotent; most
    jobs decide nothing)."""
    async with octx.lock:
        try:
            await _keep_leases(octx)
        except Exception as exc:  # the store blinked: held leases run out on their own
            log.warning("renewing leases failed", error=repr(exc))
        for job in list(octx.jobs.values()):
            if job.active and octx.leases.holds(job.job_id):
                try:
                    await advance(octx, job)
                except Exception as exc:  # one job's trouble must not starve the rest
                    log.warning("advancing a job failed", job_id=job.job_id, error=repr(exc))
        gauge(octx)


async def _keep_leases(octx: OrchestratorContext) -> None:
    """Renew this instance's leases, give up those of ended jobs, and catch up on the
    jobs it takes over (another instance may have moved them since they were folded)."""
    leases = octx.leases
    for job_id in leases.held:
        job = octx.jobs.get(job_id)
        if job is None or job.terminal is not None:
            await leases.release(job_id)
    active = [job.job_id for job in octx.jobs.values() if job.terminal is None]
    for job_id in await leases.keep(active):
        job = await projections.catch_up(octx, job_id)
        log.info("job taken", job_id=job_id, state=job.state if job else None)


async def advance(octx: OrchestratorContext, job: Job) -> None:
    """Decide and append until the job has nothing more to do now (caller holds the lock)."""
    for _ in range(MAX_STEPS):
        if job.needs_configuration:
            configured = await write_configuration(octx, job)
            saved = await execute(octx, job, partial(decide_configured, configured=configured))
            job = saved.state
            continue
        env = Env(
            now=_now(),
            online=frozenset(octx.directory.online_peers()),
            max_attempts=octx.settings.max_round_attempts,
            retry_backoff_s=octx.settings.round_retry_backoff_s,
            retry_backoff_max_s=octx.settings.round_retry_backoff_max_s,
        )
        saved = await execute(octx, job, partial(reconcile, env=env))
        if not saved.events:
            return
        job = saved.state
    log.warning("job did not settle", job_id=job.job_id)


async def execute(
    octx: OrchestratorContext,
    job: Job,
    decide: DecideJob,
    *,
    actor: str | None = None,
    retries: int | None = None,
) -> Saved[Job]:
    """Decide on the job and append to its stream (deciding again on the caught-up
    job if the stream moved under us); assigned tasks are sent at once."""
    saved = await octx.repository.execute(
        job_stream(job.job_id),
        decide,
        retries=retries,
        actor=actor,
        correlation_id=job.job_id,
    )
    for event in saved.events:
        _observe(saved.state, event)
        if isinstance(event.data, TaskAssigned):
            dispatch_soon(octx, event)
    return saved


def _observe(job: Job, event: RecordedEvent) -> None:
    kind = event.type
    if kind.startswith("task."):
        TASKS.labels(kind=kind.partition(".")[2]).inc()
    elif isinstance(event.data, RoundClosed | RoundFailed):
        rnd = job.rounds.get((event.data.round, event.data.attempt))
        outcome = "closed" if kind == "round.closed" else "failed"
        ROUNDS_CLOSED.labels(outcome=outcome, reason=rnd.close_reason if rnd else "").inc()
        if rnd is not None and rnd.closed_at is not None:
            ROUND_DURATION.observe((rnd.closed_at - rnd.opened_at).total_seconds())
            if outcome == "closed":
                ROUND_PEERS.observe(len(rnd.accepted))
    elif kind in ("job.completed", "job.failed", "job.cancelled"):
        JOBS_FINISHED.labels(state=kind.partition(".")[2]).inc()
    log.info("job event", job_id=job.job_id, type=kind, seq=event.seq)


def gauge(octx: OrchestratorContext) -> None:
    """Set the jobs-by-state gauge."""
    counts: dict[str, int] = dict.fromkeys(
        ("sharding", "running", "completed", "failed", "cancelled"), 0
    )
    for job in octx.jobs.values():
        counts[job.state] += 1
    for state, n in counts.items():
        JOBS.labels(state=state).set(n)
