"""Checked work (``aggregation.verify``): which tasks are trained twice, by whom, and
what the aggregator's comparisons (``update.checked``) decide.

Pure. A check group is a task of a round (the shard's own, *checked*), the task that
checks it (``task.assigned`` ``checks``) and, after a disagreement, a tie-break task (the
same shard, model version and seed, a third peer). The aggregator compares every pair
of the group's accepted updates; :func:`resolve` reads the verdicts:

* two that agree confirm each other (``checked`` and its check: done, no tie-break);
* checked and check disagree: undecided until the tie-break's update is compared with
  both; then every member that agrees with another is confirmed, and every other one is
  struck (``check_mismatch``). If the tie-break agrees with neither (two of the three
  are wrong: a lazy checker shielding a lazy peer), a fourth peer trains it; if that
  one agrees with nobody either, nobody is confirmed and nobody struck.

Who is checked (:func:`wants_check`): a peer on probation (fewer than
``verify.probation`` confirmations in the job), a peer with a strike (escalation), and
``verify.share`` of the others' tasks by a seeded hash (:func:`sampled`). Checks and
tie-breaks go to the job's online peers (:func:`pick_peer`): never struck before struck,
confirmed before unconfirmed, the least loaded first, so a lazy checker rarely decides
anything.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from peertrain.common.specs import derive_seed

if TYPE_CHECKING:
    from .job import Job, Round

__all__ = [
    "MAX_GROUP",
    "Resolution",
    "check_key",
    "checking",
    "pick_peer",
    "resolve",
    "sampled",
    "trusted",
    "unconfirmed",
    "wants_check",
]

MAX_GROUP = 4
"""Tasks of one check group at most: the checked one, its check, two tie-breaks."""


@dataclass(frozen=True)
class Resolution:
    """What a check group's verdicts decided: tasks confirmed, tasks struck."""

    confirmed: tuple[str, ...]
    struck: tuple[str, ...]


def resolve(members: Sequence[str], verdicts: Mapping[frozenset[str], bool]) -> Resolution | None:
    """The group's outcome; ``None`` while undecided (a verdict is missing, or the first
    two disagree and no tie-break was compared yet).

    ``members`` are the group's task ids, the checked task first, in assignment order.
    """
    if len(members) < 2:
        return None
    pairs = [frozenset(p) for p in combinations(members, 2)]
    if len(members) == 2:
        agreed = verdicts.get(pairs[0])
        return Resolution(tuple(members), ()) if agreed else None
    if any(p not in verdicts for p in pairs):
        return None
    confirmed = tuple(
        m for m in members if any(verdicts[frozenset((m, o))] for o in members if o != m)
    )
    if not confirmed and len(members) < MAX_GROUP:
        return None  # nobody agrees with anybody yet: one more tie-break
    struck = tuple(m for m in members if m not in confirmed) if confirmed else ()
    return Resolution(confirmed, struck)


def sampled(key: int, round_: int, shard: int, share: float, n: int | None = None) -> bool:
    """Whether the task of ``shard`` in ``round_`` (the job's ``n``-th task, for an
    asynchronous round, which may train a shard several times) is among ``share`` of
    the tasks: a stable hash (:func:`~peertrain.common.specs.derive_seed`) of the job's
    secret ``key`` (:func:`check_key`), the same on every instance, at every replay and
    in the simulation, and unknown to peers."""
    if share <= 0.0:
        return False
    if share >= 1.0:
        return True
    task = (round_, shard) if n is None else (round_, shard, n)
    return derive_seed(key, "verify", *task) / 2**63 < share


def check_key(job: Job) -> int:
    """The job's secret for :func:`sampled`: ``job.configured``'s ``check_key``; the
    job's seed in a log written before it (peers know that one)."""
    assert job.configured is not None
    key = job.configured.check_key
    return job.configured.training.seed if key is None else key


def trusted(job: Job, peer: str) -> bool:
    """Confirmed at least once in the job, and never struck."""
    return job.confirmations.get(peer, 0) > 0 and not job.strikes.get(peer)


def wants_check(job: Job, peer: str, round_: int, shard: int, n: int | None = None) -> bool:
    """Whether ``peer``'s task of ``shard`` in ``round_`` (the job's ``n``-th task, in
    an asynchronous round) is trained twice."""
    assert job.configured is not None
    verify = job.configured.aggregation.verify
    if not verify.enabled:
        return False
    if job.strikes.get(peer) or job.confirmations.get(peer, 0) < verify.probation:
        return True
    return sampled(check_key(job), round_, shard, verify.share, n)


def pick_peer(
    job: Job, load: Mapping[str, int], online: Collection[str], *, besides: Collection[str]
) -> str | None:
    """The job's online peer to check (or tie-break) a task of the peers ``besides``:
    one never struck before one struck, then the fewest checks held until their deadline
    (:attr:`~.job.Job.missed_checks`: a peer that sits on checks cannot keep the peers
    it checks waiting, check after check), confirmed before unconfirmed, the least
    loaded this round first, the job's peer order breaking ties; ``None`` if there is
    none."""
    assert job.created is not None
    peers = job.created.peers
    candidates = [p for p in dict.fromkeys(peers) if p in online and p not in besides]
    if not candidates:
        return None
    return min(
        candidates,
        key=lambda p: (
            bool(job.strikes.get(p)),
            job.missed_checks.get(p, 0),
            not trusted(job, p),
            load.get(p, 0),
            peers.index(p),
        ),
    )


def _group_round(job: Job, task_id: str) -> Round | None:
    """The round of ``task_id`` if it is a checked task (one with a check)."""
    task = job.find_task(task_id)
    rnd = None if task is None else job.rounds.get((task.round, task.attempt))
    return rnd if rnd is not None and len(rnd.group(task_id)) > 1 else None


def checking(job: Job, task_id: str) -> bool:
    """Whether ``task_id`` is a checked task whose check is under way."""
    rnd = _group_round(job, task_id)
    return rnd is not None and rnd.checking(task_id)


def unconfirmed(job: Job, task_id: str, online: Collection[str] | None) -> bool:
    """Whether ``task_id`` is a checked task its group has not confirmed, so that no
    version should include its update: its check under way, a tie-break due (unless
    nobody ``online`` can give it), decided without confirming it (nobody agreed with
    anybody), or never to be decided (its checks were lost). Only confirmed work of a
    checked task is aggregated, where it can be had.

    ``online``: the job's peers online now, when deciding. A group disputed with nobody
    online to break the tie (a job of two peers) is then not held against the update,
    so that such a job still moves on; without it (a view), it is.
    """
    rnd = _group_round(job, task_id)
    if rnd is None:
        return False
    decided = rnd.settled.get(task_id)
    if decided is not None:
        return task_id not in decided.confirmed
    if rnd.tie_break_due(task_id) and online is not None:
        besides = {rnd.tasks[t].peer_id for t in rnd.group(task_id)}
        return pick_peer(job, {}, online, besides=besides) is not None
    return True
