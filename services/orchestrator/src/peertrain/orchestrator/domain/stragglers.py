"""Stragglers never hold a synchronous round: over-selection and an adaptive deadline.

Pure rules over the folded job (:mod:`.job`), used by :mod:`.rounds`:

* **over-selection** (``aggregation.over_select`` ``m``): a round gives out ``n + m``
  tasks and closes on its first ``n`` accepted updates
  (:meth:`~peertrain.common.specs.AggregationSpec.round_size`); the tasks still open
  then are :func:`surplus`: ended (``task.lost`` ``surplus``), never a failure or a
  strike;
* **the adaptive deadline** (``aggregation.deadline: adaptive``): a multiple of a high
  quantile of the job's measured task durations, from the times of its events (task
  assigned to update accepted), so a replay decides the same (:func:`deadline_s`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .job import Job, Round, Task

__all__ = [
    "ADAPTIVE_WINDOW_ROUNDS",
    "closes_on",
    "deadline_s",
    "durations",
    "enough",
    "quantile",
    "round_size",
    "surplus",
    "surplus_shards",
]

ADAPTIVE_WINDOW_ROUNDS = 5
"""The adaptive deadline measures the tasks of the job's last this many closed rounds
(recent speeds: volunteers come and go, and their machines get busy or idle)."""


def round_size(job: Job) -> tuple[int, int]:
    """Tasks a round of ``job`` gives out (one per shard, before any reassignment), and
    the accepted updates it closes on (all of them, without over-selection)."""
    assert job.configured is not None
    return job.configured.aggregation.round_size(len(job.configured.shards))


def closes_on(job: Job) -> int:
    """Accepted updates a round of ``job`` closes on."""
    return round_size(job)[1]


def enough(job: Job, cur: Round) -> bool:
    """Whether the open round has the accepted updates it closes on (a shard counts once
    its checks, if ``aggregation.verify`` picked it, have their verdict)."""
    return sum(1 for s in cur.accepted if cur.shard_resolved(s)) >= closes_on(job)


def surplus(cur: Round) -> list[Task]:
    """The round's tasks still open when it closes on enough updates: not needed."""
    return [t for t in cur.tasks.values() if t.open]


def surplus_shards(cur: Round) -> list[int]:
    """The shards whose task was ended as surplus when the round closed."""
    return sorted({t.shard for t in cur.tasks.values() if t.lost_reason == "surplus"})


def durations(job: Job, rounds: int = ADAPTIVE_WINDOW_ROUNDS) -> list[float]:
    """Seconds from assignment to accepted update of the tasks of the job's last
    ``rounds`` closed rounds (attempts), each task once, oldest round first."""
    closed = [r for _, r in sorted(job.rounds.items()) if r.state == "closed"][-rounds:]
    return [
        (t.updated_at - t.assigned_at).total_seconds()
        for rnd in closed
        for t in rnd.tasks.values()
        if t.updated_at is not None and t.updated_at >= t.assigned_at
    ]


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` by nearest rank (one of the values: no
    interpolation, the same bits on every platform)."""
    if not values:
        raise ValueError("quantile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def deadline_s(job: Job) -> float:
    """Seconds the next round attempt of ``job`` stays open.

    ``fixed``: ``round_deadline_s``. ``adaptive``: ``deadline_factor`` times the
    ``deadline_quantile`` of :func:`durations`, within ``[deadline_floor_s,
    round_deadline_s]``; ``round_deadline_s`` while no task was measured yet.
    """
    assert job.configured is not None
    agg = job.configured.aggregation
    if agg.deadline == "fixed":
        return agg.round_deadline_s
    measured = durations(job)
    if not measured:
        return agg.round_deadline_s
    wanted = agg.deadline_factor * quantile(measured, agg.deadline_quantile)
    return min(agg.round_deadline_s, max(agg.deadline_floor_s, wanted))
