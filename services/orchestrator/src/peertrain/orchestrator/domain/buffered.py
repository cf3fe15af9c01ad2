"""Asynchronous rounds (FedBuff): a new version every ``buffer_size`` accepted updates.

Round ``r`` is the buffer that builds version ``r``. While it is open, every idle
online peer of the job is given a task in it, on version ``r - 1`` (the newest), as soon
as it has none: no peer waits for another. An accepted update joins the job's buffer
(:attr:`Job.buffer`, in the model stream's order) whatever round its task was given in;
when ``K`` updates are buffered, round ``r`` closes with those ``K`` (``round.closed``
``buffered``, ``included`` in arrival order, each with the version its task trained
from), and the aggregator builds version ``r`` from version ``r - 1`` plus each delta
weighted by ``samples * factor(s)``, ``s = r - 1 - base_version`` (its staleness). Round
``r + 1`` then opens on version ``r``.

The aggregator refuses an update more than ``max_staleness`` versions stale
(``too_stale``, not a strike): its task is then over and its peer gets a fresh one. What
is buffered and too stale for the next round leaves the buffer when a round closes.

A peer has one open task at a time, and is given the next as soon as its update is
accepted (or refused): a fast peer may train its shard several times in one round, each
time on the newest version, with a seed of its own (:attr:`Dispatch.seed`). Rounds never
fail; a task whose peer went offline, or that is past its deadline
(``round_deadline_s`` after it was given), is lost, and its peer gets a fresh task when
it is online again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta

from peertrain.common.events import EventData
from peertrain.common.events.models import ModelVersionCreated
from peertrain.common.events.training import IncludedUpdate, RoundClosed, RoundOpened

from . import rounds
from .checks import checking, pick_peer, unconfirmed, wants_check
from .job import Job, Round, Task

__all__ = ["TASKS_PER_ROUND", "admissible", "buffer_size", "open_buffer", "tend_buffer"]

TASKS_PER_ROUND = 2
"""Tasks of one shard in one round that may end without an accepted update (refused,
failed, lost): after as many, the shard's next task comes with the next round."""


def admissible(job: Job, base: int, online: Collection[str] | None = None) -> list[IncludedUpdate]:
    """The buffered updates a round building on version ``base`` may include (at most
    ``max_staleness`` versions stale, and, if checked, confirmed), in arrival order.

    ``online``: the job's peers online now, when deciding. A checked update whose group
    is disputed with nobody online to break the tie is then included unconfirmed, as a
    synchronous round includes it (a job too small for a tie-break still moves on);
    without it (a view), such an update counts as held.
    """
    assert job.configured is not None
    bound = job.configured.aggregation.max_staleness
    verifying = job.configured.aggregation.verify.enabled
    return [
        u
        for u in job.buffer
        if base - (u.base_version or 0) <= bound
        and not (verifying and unconfirmed(job, u.task_id, online))
    ]


def buffer_size(job: Job) -> int:
    """The job's ``K``: ``aggregation.buffer_size``, or half of its peers."""
    assert job.configured is not None and job.created is not None
    return job.configured.aggregation.buffer_for(len(set(job.created.peers)))


def open_buffer(
    job: Job, round_: int, attempt: int, version: ModelVersionCreated, env: rounds.Env
) -> list[EventData]:
    """``round.opened`` on ``version``, and a task in it for every idle online peer."""
    assert job.configured is not None
    deadline = _deadline(job, env)
    opened = RoundOpened(
        job_id=job.job_id,
        round=round_,
        attempt=attempt,
        model_version=version.version,
        model_key=version.key,
        model_sha256=version.sha256,
        deadline=deadline,
    )
    return [opened, *_give_tasks(job, round_, attempt, {}, env)]


def tend_buffer(job: Job, cur: Round, env: rounds.Env) -> list[EventData]:
    """The open round's next events: lost tasks, its close once the buffer is full, or
    tasks for the peers that are idle."""
    lost = [
        rounds._lost(job, task, "peer_offline" if task.peer_id not in env.online else "deadline")
        for task in _open_tasks(job)
        if task.peer_id not in env.online or env.now >= task.deadline
    ]
    if lost:
        return list(lost)
    tiebreaks = _tiebreaks(job, env)
    if tiebreaks:
        return tiebreaks
    ready = admissible(job, cur.model_version, env.online)
    k = buffer_size(job)
    if len(ready) >= k:
        return [
            RoundClosed(
                job_id=job.job_id,
                round=cur.round,
                attempt=cur.attempt,
                reason="buffered",
                included=tuple(ready[:k]),
            )
        ]
    return list(_give_tasks(job, cur.round, cur.attempt, cur.tasks, env))


def _open_tasks(job: Job) -> Iterable[Task]:
    for rnd in job.rounds.values():
        yield from (t for t in rnd.tasks.values() if t.open)


def _open_load(job: Job) -> dict[str, int]:
    """Open tasks by peer, over every round (what a peer trains next waits behind them)."""
    return dict(Counter(t.peer_id for t in _open_tasks(job)))


def _deadline(job: Job, env: rounds.Env) -> datetime:
    assert job.configured is not None
    return env.now + timedelta(seconds=job.configured.aggregation.round_deadline_s)


def _give_tasks(
    job: Job, round_: int, attempt: int, given: dict[str, Task], env: rounds.Env
) -> list[EventData]:
    """A task in the round for each online peer with none open, on its first shard
    without an open task that has not ended without an update ``TASKS_PER_ROUND`` times
    in the round (shard order); and its check (``aggregation.verify``), if it is picked,
    on another online peer, who trains it after what it has open. A peer whose checked
    update is being checked gets nothing new meanwhile: checks never pile up behind a
    fast peer, and a peer on probation (or struck) trains at its checks' pace."""
    assert job.configured is not None
    load = _open_load(job)
    waiting = (
        {u.peer_id for u in job.buffer if checking(job, u.task_id)}
        if job.configured.aggregation.verify.enabled
        else set()
    )
    events: list[EventData] = []
    n = job.tasks_assigned
    deadline = _deadline(job, env)
    for plan in job.configured.shards:
        peer = plan.peer_id
        if peer not in env.online or load.get(peer) or peer in waiting:
            continue
        here = [t for t in given.values() if t.shard == plan.index and t.checks is None]
        unanswered = sum(t.state in ("rejected", "failed", "lost") for t in here)
        if unanswered >= TASKS_PER_ROUND or any(t.open for t in here):
            continue
        load[peer] = 1
        n += 1
        task = rounds._assign(job, round_, attempt, plan.index, peer, n, deadline, None)
        events.append(task)
        if wants_check(job, peer, round_, plan.index, n):
            checker = pick_peer(job, load, env.online, besides={peer})
            if checker is not None:
                load[checker] = load.get(checker, 0) + 1
                n += 1
                events.append(
                    rounds._assign(
                        job, round_, attempt, plan.index, checker, n, deadline, None, task.task_id
                    )
                )
    return events


def _tiebreaks(job: Job, env: rounds.Env) -> list[EventData]:
    """Another peer for each check group compared in full without a decision, in the
    round of the task it checks (whose version and seed it trains), as in a synchronous
    round; none while no other peer is online (its update then waits, and goes when it
    is too stale)."""
    assert job.configured is not None
    if not job.configured.aggregation.verify.enabled:
        return []
    load = _open_load(job)
    events: list[EventData] = []
    deadline = _deadline(job, env)
    for rnd in job.rounds.values():
        n = job.tasks_assigned + len(events)
        events += rounds.tie_breaks(job, rnd, load, env.online, deadline, n)
    return events
