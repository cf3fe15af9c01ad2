"""What a configured job should do next: open rounds, tend them, close them, end the job.

:func:`reconcile` looks at a job's state and the peers online now and returns the job
events that should be appended next (possibly none). It is idempotent: after a
restart, replaying the streams and reconciling again gives the same decisions, and a
fact seen twice changes nothing.

A job fails only for its own reasons, and says which:

* a round (or a retry) opens only with enough of the job's peers online; otherwise it
  waits (``round.waiting``) for up to ``aggregation.peer_wait_s``, then the job fails
  with ``too_few_peers_online``;
* a failed attempt counts against ``max_attempts`` only when peers failed it (an update
  refused, a training failed, a deadline missed), not when they only went offline; its
  retry opens after a backoff (``round.failed`` ``retry_at``), never in the same batch;
* a round that ends with no accepted update and some refused for their numbers, or a
  model version the aggregator found non-finite, fails the job with
  ``training_diverged``, and nobody gets a strike for it.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from statistics import median
from typing import Literal

from peertrain.common.events import EventData
from peertrain.common.events.models import ModelVersionCreated
from peertrain.common.events.training import (
    DroppedUpdate,
    IncludedUpdate,
    JobCompleted,
    JobFailed,
    PeerExcluded,
    RoundClosed,
    RoundFailed,
    RoundOpened,
    RoundWaiting,
    ShardPlan,
    TaskAssigned,
    TaskLost,
    update_key,
)
from peertrain.common.specs import derive_seed

from . import buffered, stragglers
from .checks import pick_peer, unconfirmed, wants_check
from .job import Job, Round, Task, withdrawn

__all__ = [
    "MAX_ATTEMPTS_FACTOR",
    "Env",
    "outliers",
    "reconcile",
    "retry_delay",
    "round_shards",
    "tie_breaks",
]

MAX_ATTEMPTS_FACTOR = 10
"""A round is opened at most ``max_attempts`` times this many in all, counted attempts
or not (peers that keep coming online and vanishing must not hold a job forever)."""


@dataclass(frozen=True)
class Env:
    """What a decision may depend on besides the job: the time and the peers online.

    ``max_attempts``: attempts of one round that peers may fail before the job fails;
    ``retry_backoff_s`` and ``retry_backoff_max_s``: the wait before a failed attempt's
    retry, doubling with each attempt up to the cap.
    """

    now: datetime
    online: frozenset[str]
    max_attempts: int = 3
    retry_backoff_s: float = 2.0
    retry_backoff_max_s: float = 60.0


def retry_delay(env: Env, attempt: int) -> timedelta:
    """How long after attempt ``attempt`` failed its retry may open."""
    seconds = env.retry_backoff_s * 2.0 ** min(attempt - 1, 30)
    return timedelta(seconds=min(seconds, env.retry_backoff_max_s))


def reconcile(job: Job, env: Env) -> list[EventData]:
    """The job events to append next (a batch; call again after applying it)."""
    if job.terminal is not None or job.created is None:
        return []
    if job.sharding_failed is not None and job.configured is None:
        failed = job.sharding_failed
        return [JobFailed(job_id=job.job_id, code=failed.code, reason=failed.message)]
    if job.configured is None:
        return []
    if job.diverged is not None:
        return [_diverged_version(job, job.diverged.version, job.diverged.reason)]
    excluding = _exclusions(job)
    if excluding:
        return excluding
    if job.excluded:  # an excluded peer is given nothing more, as if it were offline
        env = replace(env, online=env.online - job.excluded.keys())
    cur = job.current
    if cur is not None and cur.state == "open":
        if job.is_async:
            return buffered.tend_buffer(job, cur, env)
        return _tend_round(job, cur, env)
    if cur is not None and cur.state == "failed":
        return _retry(job, cur, env)
    next_round = 1 if cur is None else cur.round + 1
    if next_round > job.configured.rounds:
        final = job.configured.rounds
        if job.exported is not None and job.exported.version == final:
            ev = job.evaluations.get(final)
            return [
                JobCompleted(
                    job_id=job.job_id,
                    final_version=final,
                    accuracy=ev.accuracy if ev else None,
                    loss=ev.loss if ev else None,
                )
            ]
        return []
    version = job.versions.get(next_round - 1)
    if version is None:
        # waiting for the aggregator, with no limit: it may be down (jobs pause and go
        # on), and its holder re-derives a version whose round.closed it missed
        return []
    return _start(job, next_round, 1, version, env)


def _retry(job: Job, cur: Round, env: Env) -> list[EventData]:
    """The next attempt of a failed round, once its backoff is over (an old log's
    retry was opened in the failing batch: then ``cur`` is that one, never this)."""
    failed = cur.failed
    if failed is None or not failed.retry:
        return []  # the job failed with it
    if failed.retry_at is not None and env.now < failed.retry_at:
        return []
    version = job.versions.get(cur.model_version)
    if version is None:  # pragma: no cover - a round is only opened on a known version
        return []
    return _start(job, cur.round, cur.attempt + 1, version, env)


def _start(
    job: Job, round_: int, attempt: int, version: ModelVersionCreated, env: Env
) -> list[EventData]:
    """Open the attempt if enough of the job's peers are online; else wait for them
    (``round.waiting``, once), and fail the job when the wait is over."""
    assert job.configured is not None and job.created is not None
    agg = job.configured.aggregation
    peers = set(job.created.peers) - job.excluded.keys()
    online = len(peers & env.online)
    # min_peers of them; or all that are left, if exclusions left fewer (spares train
    # the others' shards, as they always did)
    needed = max(1, min(agg.min_peers, len(peers)))
    if online >= needed:
        return _open(job, round_, attempt, version, env)
    waiting = job.waiting
    if waiting is None or (waiting.round, waiting.attempt) != (round_, attempt):
        return [
            RoundWaiting(
                job_id=job.job_id,
                round=round_,
                attempt=attempt,
                online=online,
                needed=needed,
                since=env.now,
                until=env.now + timedelta(seconds=agg.peer_wait_s),
            )
        ]
    if env.now < waiting.until:
        return []
    return [
        JobFailed(
            job_id=job.job_id,
            code="too_few_peers_online",
            reason=(
                f"round {round_} waited {agg.peer_wait_s:g} s for peers: {online} of the "
                f"job's {len(job.created.peers)} peer(s) online, {needed} needed "
                f"(aggregation.min_peers={agg.min_peers}); bring peers online, or set "
                "aggregation.peer_wait_s to wait longer"
            ),
        )
    ]


def _exclusions(job: Job) -> list[EventData]:
    """``peer.excluded`` for each peer with enough strikes that is not excluded yet."""
    assert job.configured is not None
    limit = job.configured.aggregation.exclude_after
    return [
        PeerExcluded(
            job_id=job.job_id,
            peer_id=peer,
            strikes=len(strikes),
            reason=(
                f"{len(strikes)} of its updates or announcements were refused "
                f"(last: {strikes[-1].code}: {strikes[-1].reason})"
            )[:1000],
        )
        for peer, strikes in job.strikes.items()
        if len(strikes) >= limit and peer not in job.excluded
    ]


def round_shards(job: Job, round_: int) -> list[ShardPlan]:
    """The shards trained in ``round_``: every one, or a seeded sample of
    ``aggregation.peers_per_round`` of them, plus ``over_select`` more (the same for
    every attempt and replay; see :meth:`~peertrain.common.specs.AggregationSpec.round_size`)."""
    assert job.configured is not None
    plans = list(job.configured.shards)
    size, _ = job.configured.aggregation.round_size(len(plans))
    if size >= len(plans):
        return plans
    rng = random.Random(derive_seed(job.configured.training.seed, "peers_per_round", round_))
    return sorted(rng.sample(plans, size), key=lambda plan: plan.index)


def _deadline(job: Job, env: Env) -> datetime:
    return env.now + timedelta(seconds=stragglers.deadline_s(job))


def _open(
    job: Job, round_: int, attempt: int, version: ModelVersionCreated, env: Env
) -> list[EventData]:
    assert job.configured is not None
    if job.is_async:
        return buffered.open_buffer(job, round_, attempt, version, env)
    deadline = _deadline(job, env)
    events: list[EventData] = [
        RoundOpened(
            job_id=job.job_id,
            round=round_,
            attempt=attempt,
            model_version=version.version,
            model_key=version.key,
            model_sha256=version.sha256,
            deadline=deadline,
        )
    ]
    load: dict[str, int] = {}
    n = job.tasks_assigned
    primaries: list[TaskAssigned] = []
    for plan in round_shards(job, round_):
        peer = plan.peer_id
        if peer not in env.online:
            spare = _spare(job, load, env, exclude=peer)
            peer = spare or peer
        load[peer] = load.get(peer, 0) + 1
        n += 1
        primaries.append(_assign(job, round_, attempt, plan.index, peer, n, deadline, None))
    events += primaries
    for task in primaries:  # checked work: picked tasks are trained again by another peer
        check = _check(job, task, load, env, n + 1)
        if check is not None:
            n += 1
            events.append(check)
    return events


def _check(
    job: Job, task: TaskAssigned, load: dict[str, int], env: Env, n: int
) -> TaskAssigned | None:
    """The check of ``task`` (``aggregation.verify``), if it is picked and another of the
    job's peers is online to train it; ``load`` counts it."""
    if not wants_check(job, task.peer_id, task.round, task.shard):
        return None
    checker = pick_peer(job, load, env.online, besides={task.peer_id})
    if checker is None:
        return None
    load[checker] = load.get(checker, 0) + 1
    return _assign(
        job, task.round, task.attempt, task.shard, checker, n, task.deadline, None, task.task_id
    )


def _assign(
    job: Job,
    round_: int,
    attempt: int,
    shard: int,
    peer: str,
    n: int,
    deadline: datetime,
    replaces: str | None,
    checks: str | None = None,
) -> TaskAssigned:
    return TaskAssigned(
        job_id=job.job_id,
        task_id=f"{job.job_id}.r{round_}.a{attempt}.s{shard}.{n}",
        round=round_,
        attempt=attempt,
        shard=shard,
        peer_id=peer,
        update_key=update_key(job.job_id, round_, attempt, shard, peer),
        deadline=deadline,
        reassigned_from=replaces,
        checks=checks,
    )


def _spare(job: Job, load: dict[str, int], env: Env, *, exclude: str) -> str | None:
    """The job's online peer with the least work this round (shard order breaks ties),
    one without strikes before one with."""
    assert job.created is not None
    peers = job.created.peers
    candidates = [p for p in dict.fromkeys(peers) if p in env.online and p != exclude]
    if not candidates:
        return None
    return min(candidates, key=lambda p: (bool(job.strikes.get(p)), load.get(p, 0), peers.index(p)))


def _reassign(job: Job, cur: Round, env: Env) -> list[EventData]:
    """Work of the open round that must move to another of the job's online peers."""
    events: list[EventData] = []
    load = {p: cur.open_load(p) for p in {t.peer_id for t in cur.tasks.values()}}
    n = job.tasks_assigned

    def give_away(task: Task) -> None:
        nonlocal n
        if task.checks is not None:
            return  # a check (or tie-break) lost is a check not made: nothing moves
        held = cur.accepted.get(task.shard)
        if held is not None and held.task_id != task.task_id:
            return  # the shard has another task's update (a confirmed one)
        spare = _spare(job, load, env, exclude=task.peer_id)
        if spare is None:
            return
        load[spare] = load.get(spare, 0) + 1
        n += 1
        again = _assign(
            job, cur.round, cur.attempt, task.shard, spare, n, cur.deadline, task.task_id
        )
        events.append(again)
        check = _check(job, again, load, env, n + 1)  # a spare's work is checked as its own
        if check is not None:
            n += 1
            events.append(check)

    if env.now >= cur.deadline:
        return events
    # 1. tasks whose peer went offline: lost, and given to a spare peer if there is one
    #    (an excluded peer's update in the open round is withdrawn the same way: what a
    #    peer caught cheating sent is not aggregated, and its shard is trained again)
    for task in list(cur.tasks.values()):
        if not (task.open or withdrawn(job, task)) or task.peer_id in env.online:
            continue
        events.append(
            _lost(job, task, "excluded" if task.peer_id in job.excluded else "peer_offline")
        )
        load[task.peer_id] = load.get(task.peer_id, 1) - 1
        give_away(task)
    # 2. a shard whose update was rejected (or whose training failed) is trained once more
    #    by another online peer: a hostile or broken peer cannot take its data out of the
    #    round. The seed is the shard's, so an honest retry gives the honest update.
    for task in list(cur.tasks.values()):
        if task.state not in ("rejected", "failed") or task.replaced or task.checks:
            continue
        if task.reassigned_from is not None or not cur.shard_resolved(task.shard):
            continue  # one retry per shard and round; or another task is still on it
        if task.shard not in cur.accepted:
            give_away(task)
    return events


def _tiebreaks(job: Job, cur: Round, env: Env) -> list[EventData]:
    """Another peer for each check group compared in full without a decision (a third
    after a disagreement, a fourth if the third agrees with neither; none if no other
    peer is online: the group stays undecided, nobody is struck)."""
    if env.now >= cur.deadline:
        return []
    load = {p: cur.open_load(p) for p in {t.peer_id for t in cur.tasks.values()}}
    return list(tie_breaks(job, cur, load, env.online, cur.deadline, job.tasks_assigned))


def tie_breaks(
    job: Job,
    rnd: Round,
    load: dict[str, int],
    online: frozenset[str],
    deadline: datetime,
    n: int,
) -> list[TaskAssigned]:
    """A tie-break task in ``rnd`` for each of its check groups compared in full without
    a decision, on the peer :func:`~.checks.pick_peer` picks outside the group (none
    when there is no such peer online); ``load`` counts them, and their numbers follow
    the job's ``n``-th task."""
    events: list[TaskAssigned] = []
    for checked in rnd.disputed():
        task = rnd.tasks[checked]
        besides = {rnd.tasks[t].peer_id for t in rnd.group(checked)}
        peer = pick_peer(job, load, online, besides=besides)
        if peer is None:
            continue
        load[peer] = load.get(peer, 0) + 1
        n += 1
        events.append(
            _assign(job, rnd.round, rnd.attempt, task.shard, peer, n, deadline, None, checked)
        )
    return events


def _tend_round(job: Job, cur: Round, env: Env) -> list[EventData]:
    assert job.configured is not None
    events = _reassign(job, cur, env) or _tiebreaks(job, cur, env)
    if events:
        return events
    # 3. close when every shard is resolved, on enough accepted updates (over-selection:
    #    the tasks still open are surplus, ended without a strike), or at the deadline
    shards = [plan.index for plan in round_shards(job, cur.round)]
    everything = all(cur.shard_resolved(s) for s in shards)
    enough = stragglers.enough(job, cur)
    if not (everything or enough) and env.now < cur.deadline:
        return []
    late: list[EventData] = []
    if enough and not everything:
        events += [_lost(job, t, "surplus") for t in stragglers.surplus(cur)]
    elif not everything:
        late = [_lost(job, t, "deadline") for t in cur.tasks.values() if t.open]
        events += late
    agg = job.configured.aggregation
    accepted = len(cur.accepted)
    if accepted == 0 and _diverging(job, cur):
        # every update that came was refused, for its numbers: the training diverged
        # (the job's settings), not its peers; nobody gets a strike for it
        events.append(_diverged_round(job, cur))
        return events
    if accepted >= agg.min_peers:
        reason: Literal["complete", "deadline", "resolved"] = (
            "complete" if enough else "resolved" if everything else "deadline"
        )
        dropped = outliers(cur, agg.norm_outlier, keep=agg.min_peers)
        left_out = {d.shard for d in dropped}
        included = tuple(cur.accepted[s] for s in sorted(cur.accepted) if s not in left_out)
        held = _unconfirmed(job, included, env.online, keep=agg.min_peers)
        included = tuple(u for u in included if u not in held)
        events.append(
            RoundClosed(
                job_id=job.job_id,
                round=cur.round,
                attempt=cur.attempt,
                reason=reason,
                included=included,
                dropped=dropped,
                unconfirmed=held,
            )
        )
        return events
    # an attempt is spent only when peers failed it; not when they only went offline
    counted = bool(late) or any(_peer_failed(t) for t in cur.tasks.values())
    spent = counted + sum(
        1
        for (r, _), rnd in job.rounds.items()
        if r == cur.round and rnd.failed is not None and rnd.failed.counted
    )
    retry = spent < env.max_attempts and cur.attempt < env.max_attempts * MAX_ATTEMPTS_FACTOR
    events.append(
        RoundFailed(
            job_id=job.job_id,
            round=cur.round,
            attempt=cur.attempt,
            accepted=accepted,
            min_peers=agg.min_peers,
            retry=retry,
            counted=counted,
            retry_at=env.now + retry_delay(env, cur.attempt) if retry else None,
        )
    )
    if not retry:
        events.append(
            JobFailed(
                job_id=job.job_id,
                code="too_few_updates",
                reason=(
                    f"round {cur.round} got {accepted} accepted update(s), fewer than "
                    f"min_peers={agg.min_peers}, in {cur.attempt} attempt(s), {spent} of "
                    f"them failed by peers; in the last, {_shortfall(job, cur, late)}"
                    + (
                        f"; {len(cur.numeric)} update(s) of the last were refused for "
                        f"their numbers: if training diverges, {SETTINGS_HINT}"
                        if cur.numeric
                        else ""
                    )
                )[:2000],
            )
        )
    return events


def outliers(cur: Round, factor: float | None, *, keep: int) -> tuple[DroppedUpdate, ...]:
    """The round's accepted updates whose norm is over ``factor`` times the median norm
    of its accepted updates, to be left out of its version (each a strike).

    Measured within the round, at its close: whatever order the updates came in, the
    same are left out, and a round whose updates are all larger than the last round's
    (honest-but-large) loses none. Outliers are a minority by construction (each is over
    the median), so the honest majority's median sets the bound; with fewer than three
    updates none can be. Nothing is left out where that would leave fewer than ``keep``
    (the clipping at close still bounds such an update's effect)."""
    norms = {s: cur.norms[s] for s in cur.accepted if s in cur.norms}
    if factor is None or len(norms) < 3:
        return ()
    bound = factor * median(norms.values())
    dropped = tuple(
        DroppedUpdate(
            shard=s,
            peer_id=cur.accepted[s].peer_id,
            task_id=cur.accepted[s].task_id,
            norm=n,
            bound=bound,
        )
        for s, n in sorted(norms.items())
        if n > bound
    )
    return dropped if len(cur.accepted) - len(dropped) >= keep else ()


def _unconfirmed(
    job: Job, included: tuple[IncludedUpdate, ...], online: frozenset[str], *, keep: int
) -> tuple[IncludedUpdate, ...]:
    """The updates of ``included`` to leave out: those of checked tasks their group did
    not confirm (:func:`~.checks.unconfirmed`: no two of its peers agreed, its check was
    lost, or the deadline came first). Their shards sit the round out, unless that would
    leave fewer than ``keep`` (then none is left out: they go in unconfirmed, as without
    checks, and the norm bounds and clipping still hold them). Nobody is struck for it."""
    assert job.configured is not None
    if not job.configured.aggregation.verify.enabled:
        return ()
    out = tuple(u for u in included if unconfirmed(job, u.task_id, online))
    return out if len(included) - len(out) >= keep else ()


def _diverging(job: Job, cur: Round) -> bool:
    """Updates refused for their numbers, from two peers or more (a shard refused so is
    trained again by another peer, with the same seed: an honest retry of a diverging
    shard is refused too, a hostile peer's NaN is not); from one, in a one-peer job."""
    assert job.created is not None
    senders = {r.peer_id for r in cur.numeric}
    return len(senders) >= min(2, len(set(job.created.peers)))


def _shortfall(job: Job, cur: Round, late: list[EventData]) -> str:
    """What became of the tasks of attempt ``cur`` that gave no accepted update, ``late``
    the ones its deadline ends now: which of them missed it, were refused (by code),
    failed, or lost their peer; with what to change when the deadline was too short."""
    assert job.configured is not None
    ended = {e.task_id for e in late if isinstance(e, TaskLost)}
    refused = {r.task_id: r.code for r in job.rejected if r.task_id in cur.tasks}
    seen: Counter[str] = Counter()
    for task in cur.tasks.values():
        if task.task_id in ended or task.lost_reason == "deadline":
            seen["missed the deadline"] += 1
        elif task.state == "rejected":
            seen[f"update refused ({refused.get(task.task_id, 'refused')})"] += 1
        elif task.state == "failed":
            seen["training failed"] += 1
        elif task.lost_reason in ("peer_offline", "excluded"):
            seen["peer offline" if task.lost_reason == "peer_offline" else "peer excluded"] += 1
    if not seen:
        return "no task was left open"
    what = ", ".join(f"{n} {kind}" for kind, n in sorted(seen.items()))
    if not seen["missed the deadline"]:
        return f"tasks without an accepted update: {what}"
    agg = job.configured.aggregation
    if agg.deadline == "fixed":
        rule = f"the round's deadline: {agg.round_deadline_s:g} s"
        change = "aggregation.round_deadline_s, or set aggregation.deadline: adaptive"
    else:
        rule = f"the round's adaptive deadline, at most {agg.round_deadline_s:g} s"
        change = "aggregation.deadline_factor or aggregation.round_deadline_s"
    return (
        f"tasks without an accepted update: {what} ({rule}; if the slowest peers need "
        f"longer, raise {change}, or lower aggregation.min_peers)"
    )


def _peer_failed(task: Task) -> bool:
    """Whether the task's peer failed it (not only went offline, nor was superseded)."""
    return task.state in ("rejected", "failed") or task.lost_reason in ("deadline", "excluded")


SETTINGS_HINT = (
    "lower training.lr (or training.momentum), or raise aggregation.max_update_norm "
    "if such updates are expected"
)


def _diverged_round(job: Job, cur: Round) -> JobFailed:
    seen = Counter(r.code for r in cur.numeric)
    what = ", ".join(f"{n} {code}" for code, n in sorted(seen.items()))
    example = _example(cur)
    return JobFailed(
        job_id=job.job_id,
        code="training_diverged",
        reason=(
            f"training diverged in round {cur.round}: no update was accepted, "
            f"{len(cur.numeric)} were refused for their numbers ({what}{example}); "
            f"{SETTINGS_HINT}"
        )[:2000],
    )


def _example(cur: Round) -> str:
    """``; e.g. L2 norm 1.2e+05 ...``: the first norm refusal's reason, if any."""
    for refused in cur.numeric:
        if refused.code != "non_finite":
            return f"; e.g. {refused.reason[:200]}"
    return ""


def _diverged_version(job: Job, version: int, why: str) -> JobFailed:
    return JobFailed(
        job_id=job.job_id,
        code="training_diverged",
        reason=f"training diverged: model version {version} {why}; {SETTINGS_HINT}"[:2000],
    )


def _lost(
    job: Job, task: Task, reason: Literal["peer_offline", "deadline", "excluded", "surplus"]
) -> TaskLost:
    return TaskLost(
        job_id=job.job_id,
        task_id=task.task_id,
        round=task.round,
        shard=task.shard,
        peer_id=task.peer_id,
        reason=reason,
    )
