"""Which jobs this instance makes model versions for, and taking over the jobs of
instances that stopped (see :mod:`peertrain.common.leases`).

Every instance hears every job event (a queue of its own); the holder of a job's lease
reconciles the job (:func:`~.versions.reconcile`), the others fold the event into the
job's cached state (they check its updates too) and note which jobs are active, so that
one of them can take a job over when its holder stops renewing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import structlog

from peertrain.common.eventlog import ConcurrencyError
from peertrain.common.events import RecordedEvent
from peertrain.common.events.models import model_stream
from peertrain.common.events.training import (
    JOB_CANCELLED,
    JOB_COMPLETED,
    JOB_CONFIGURED,
    JOB_FAILED,
    PEER_EXCLUDED,
    ROUND_CLOSED,
    ROUND_OPENED,
    TASK_ASSIGNED,
    TASK_LOST,
    RoundClosed,
    RoundOpened,
)

from ..domain import JobMemory
from .storage import model_state
from .versions import reconcile

if TYPE_CHECKING:
    from ..application import AggregatorApp

__all__ = [
    "ENDED",
    "JOB_EVENTS",
    "find_active",
    "fold_job_event",
    "keep_leases",
    "on_job_event",
    "redrive_stalled",
]

log = structlog.get_logger(__name__)

ENDED = (JOB_COMPLETED, JOB_FAILED, JOB_CANCELLED)

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
"""The job events the aggregator acts on (:func:`on_job_event`); it hears every job
event (``JOB_EVENT_TYPES``) and folds the others (:func:`fold_job_event`)."""

RECONCILE_ATTEMPTS = 5
"""Tries at a job's model work, each on the state read on after a conflict."""


async def on_job_event(app: AggregatorApp, job_id: str, event: RecordedEvent) -> None:
    """A job event: note the job's life; reconcile it if this instance holds it."""
    if event.type == JOB_CONFIGURED:
        app.active.add(job_id)
    elif event.type in ENDED:
        app.active.discard(job_id)
    if not await app.leases.claim(job_id):
        async with app.lock(job_id):
            if event.type in ENDED:
                app.forget(job_id)
            else:
                app.observe(job_id, event)  # current for checking the job's updates
                if isinstance(event.data, RoundOpened):
                    await _fetch_base(app, job_id, event.data)
        return
    async with app.lock(job_id):
        # other instances record updates too: read them before making a round's version,
        # unless the feed brought this one every update the round includes (their
        # update.accepted): then a conflict on append is what reads on, if anything
        fresh = event.type == ROUND_CLOSED and not _inputs_known(app, job_id, event)
        state = await app.load(job_id, event, fresh_models=fresh)
        for _ in range(RECONCILE_ATTEMPTS - 1):
            try:
                await reconcile(app, state, event)
                break
            except ConcurrencyError:  # another instance's verdict landed first: read on
                state = await app.load(job_id, catch_up=True, fresh_models=True)
        else:
            await reconcile(app, state, event)  # the last try raises: redelivered
    await _let_go_if_ended(app, state)


async def _fetch_base(app: AggregatorApp, job_id: str, opened: RoundOpened) -> None:
    """The model version a round opened on, read now by an instance that does not hold
    the job: its peers' updates are checked against it, and the first one to reach
    this instance no longer waits for the download (best effort: checking reads it
    anyway)."""
    state = await app.load(job_id)
    if state.configured is None:
        return
    try:
        await model_state(app, state, opened.model_version)
    except Exception as exc:
        log.info("the round's base version is not readable yet", error=repr(exc)[:200])


def _inputs_known(app: AggregatorApp, job_id: str, event: RecordedEvent) -> bool:
    """Whether the job's cached state has accepted every update ``round.closed``
    includes, as the round names it (no I/O)."""
    closed = event.data
    cached = app.models.cached(model_stream(job_id))
    if not isinstance(closed, RoundClosed) or cached is None:
        return False
    accepted = cached.state.accepted
    for inc in closed.included:
        found = accepted.get((closed.round, closed.attempt, inc.shard))
        if found is None or (found.key, found.sha256) != (inc.key, inc.sha256):
            return False
    return True


async def fold_job_event(app: AggregatorApp, job_id: str, event: RecordedEvent) -> None:
    """A job event the aggregator does not act on (a task accepted, its progress, ...):
    folded into the job's cached state if it is the next one (no I/O).

    Without them the state fell behind the job stream at every such event, and the next
    update or round read the stream on from there (in a four-peer job, 300 reads).
    """
    async with app.lock(job_id):
        app.observe(job_id, event)


async def keep_leases(app: AggregatorApp) -> None:
    """Renew this instance's leases; catch up on and reconcile the jobs it takes over."""
    for job_id in app.leases.held:
        if job_id not in app.active:
            await app.leases.release(job_id)
    for job_id in [j for j in app.holder_memory() if not app.leases.holds(j)]:
        app.let_go(job_id)  # handed over (or lost): its running sum is the holder's now
    for job_id in await app.leases.keep(sorted(app.active)):
        async with app.lock(job_id):
            state = await app.load(job_id, catch_up=True, fresh_models=True)
            log.info("job taken", job_id=job_id, versions=sorted(state.versions))
            await reconcile(app, state, None)
        await _let_go_if_ended(app, state)
    await redrive_stalled(app, app.clock.now())


async def redrive_stalled(app: AggregatorApp, now: datetime) -> None:
    """Read on and reconcile each held job that has looked stalled for
    ``stall_grace_s``: a ``round.closed`` (or the job's end) lost on the way here would
    otherwise leave its version unmade and the orchestrator waiting for it forever.

    Only the cached state is looked at (no I/O) until a job has looked stalled that
    long, so a healthy job costs nothing; a stalled one costs one read per grace.
    """
    grace = timedelta(seconds=app.settings.stall_grace_s)
    for job_id in app.leases.held:
        loaded = app.models.cached(model_stream(job_id))
        if loaded is None or not loaded.state.stalled(now, grace):
            app.stalled.pop(job_id, None)
            continue
        since = app.stalled.setdefault(job_id, now)
        if now - since < grace:
            continue
        app.stalled[job_id] = now  # the next try, a grace from now
        async with app.lock(job_id):
            state = await app.load(job_id, catch_up=True, fresh_models=True)
            log.warning("re-deriving a stalled job's model work", job_id=job_id)
            await reconcile(app, state, None)
        await _let_go_if_ended(app, state)


async def _let_go_if_ended(app: AggregatorApp, state: JobMemory) -> None:
    """An ended job is no longer active, and its lease goes back."""
    if state.ended is not None:
        app.active.discard(state.job_id)
        await app.leases.release(state.job_id)


async def find_active(app: AggregatorApp) -> int:
    """Note every job the log shows configured and not ended (at start-up: events
    from before this instance's queue existed); how many there are."""
    configured: set[str] = set()
    ended: set[str] = set()
    async for event in app.log.read_all(types=(JOB_CONFIGURED, *ENDED)):
        job_id = getattr(event.data, "job_id", None)
        if isinstance(job_id, str):
            (configured if event.type == JOB_CONFIGURED else ended).add(job_id)
    app.active |= configured - ended
    return len(configured - ended)
