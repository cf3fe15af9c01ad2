"""Moving jobs on: decide (pure), append, observe; after facts, on the clock, at start-up.

Decisions come from :func:`~peertrain.orchestrator.domain.reconcile`, run after every
fact and on a timer (deadlines), always under the context's lock, and only for the
jobs whose lease this instance holds (:mod:`peertrain.common.leases`): the timer also
renews the leases and takes over the jobs of instances that stopped (sending the
tasks of their open rounds that no peer has taken on yet: see ``dispatch``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

import structlog

from peertrain.common.eventlog import Saved
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.training import RoundClosed, RoundFailed, TaskAssigned, job_stream

from ..domain import Env, Job, reconcile
from ..domain.job import decide_configured
from ..metrics import JOBS, JOBS_FINISHED, ROUND_DURATION, ROUND_PEERS, ROUNDS_CLOSED, TASKS
from . import catchup
from .configure import write_configuration
from .dispatch import dispatch_soon, resend_open

if TYPE_CHECKING:
    from ..application import OrchestratorApp

__all__ = ["DecideJob", "advance", "execute", "gauge", "on_fact", "replay", "tick"]

log = structlog.get_logger(__name__)

MAX_STEPS = 20

DecideJob = Callable[[Job], Sequence[EventData | NewEvent]]
"""A decision on a job: payloads (appended with the call's envelope) or whole events."""


async def replay(app: OrchestratorApp) -> None:
    """Rebuild the directory and every job from the log, then catch up on the jobs
    this instance takes."""
    async with app.lock:
        count = await catchup.replay(app)
        await _keep_leases(app)
        for job in app.jobs.values():
            if job.terminal is None and app.leases.holds(job.job_id):
                await advance(app, job)
        gauge(app)
    app.ready = True
    log.info("replayed the log", events=count, jobs=len(app.jobs))


async def on_fact(app: OrchestratorApp, event: RecordedEvent) -> None:
    """An event from the bus (another service's, or a job's): fold it and advance
    what it concerns, if this instance works on that."""
    async with app.lock:
        if app.directory.apply(event):
            if event.stream.startswith("peer:"):
                peer_id = event.stream.partition(":")[2]
                for job in [j for j in app.jobs.values() if j.runs_with(peer_id)]:
                    if app.leases.holds(job.job_id):
                        await advance(app, job)
            return
        known = app.jobs.get(event.stream.partition(":")[2])
        if known is not None and event.stream.startswith("job:") and event.seq <= known.version:
            return  # this instance appended it (or folded it already)
        touched = await catchup.follow(app, event)
        if touched is None:
            return
        async with app.folded:
            app.folded.notify_all()
        if touched.terminal is not None:
            gauge(app)
            return
        held = app.leases.holds(touched.job_id)
        if await app.leases.claim(touched.job_id):
            if not held:  # just taken: its holder may have died before sending
                resend_open(app, touched)
            await advance(app, touched)


async def tick(app: OrchestratorApp) -> None:
    """Leases, deadlines, and anything a failed append left undecided: advance every
    job of this instance's that has not ended (deciding is pure and idempotent; most
    jobs decide nothing)."""
    async with app.lock:
        try:
            await _keep_leases(app)
        except Exception as exc:  # the store blinked: held leases run out on their own
            log.warning("renewing leases failed", error=repr(exc))
        for job in list(app.jobs.values()):
            if job.active and app.leases.holds(job.job_id):
                try:
                    await advance(app, job)
                except Exception as exc:  # one job's trouble must not starve the rest
                    log.warning("advancing a job failed", job_id=job.job_id, error=repr(exc))
        gauge(app)


async def _keep_leases(app: OrchestratorApp) -> None:
    """Renew this instance's leases, give up those of ended jobs, and catch up on the
    jobs it takes over (another instance may have moved them since they were folded)."""
    leases = app.leases
    for job_id in leases.held:
        job = app.jobs.get(job_id)
        if job is None or job.terminal is not None:
            await leases.release(job_id)
    active = [job.job_id for job in app.jobs.values() if job.terminal is None]
    for job_id in await leases.keep(active):
        job = await catchup.catch_up(app, job_id)
        log.info("job taken", job_id=job_id, state=job.state if job else None)
        if job is not None:  # its holder may have died between assigning and sending
            resend_open(app, job)


async def advance(app: OrchestratorApp, job: Job) -> None:
    """Decide and append until the job has nothing more to do now (caller holds the lock)."""
    for _ in range(MAX_STEPS):
        if job.needs_configuration:
            configured = await write_configuration(app, job)
            saved = await execute(app, job, partial(decide_configured, configured=configured))
            job = saved.state
            continue
        env = Env(
            now=app.clock.now(),
            online=frozenset(app.directory.online_peers()),
            max_attempts=app.settings.max_round_attempts,
            retry_backoff_s=app.settings.round_retry_backoff_s,
            retry_backoff_max_s=app.settings.round_retry_backoff_max_s,
        )
        saved = await execute(app, job, partial(reconcile, env=env))
        if not saved.events:
            return
        job = saved.state
    log.warning("job did not settle", job_id=job.job_id)


async def execute(
    app: OrchestratorApp,
    job: Job,
    decide: DecideJob,
    *,
    actor: str | None = None,
    retries: int | None = None,
) -> Saved[Job]:
    """Decide on the job and append to its stream (deciding again on the caught-up
    job if the stream moved under us); assigned tasks are sent at once."""
    saved = await app.repository.execute(
        job_stream(job.job_id),
        decide,
        retries=retries,
        actor=actor,
        correlation_id=job.job_id,
    )
    for event in saved.events:
        _observe(saved.state, event)
        if isinstance(event.data, TaskAssigned):
            dispatch_soon(app, event)
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


def gauge(app: OrchestratorApp) -> None:
    """Set the jobs-by-state gauge."""
    counts: dict[str, int] = dict.fromkeys(
        ("sharding", "running", "completed", "failed", "cancelled"), 0
    )
    for job in app.jobs.values():
        counts[job.state] += 1
    for state, n in counts.items():
        JOBS.labels(state=state).set(n)
