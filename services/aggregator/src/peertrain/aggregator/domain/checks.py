"""Checked work, the aggregator's part (pure): which accepted updates a new one is
compared with, and the verdict (``update.checked``) on a pair.

A checked task, its check and its tie-break (``task.assigned`` ``checks``) train one
shard from one model version with one seed, so honest updates differ only by floating-
point noise. Every pair of the group's accepted updates is compared once: when the
second of a pair is accepted, in the same append. What the verdicts decide (who is
confirmed, who is struck) is the orchestrator's fold.
"""

from __future__ import annotations

import math

from peertrain.common.events.models import UpdateAccepted, UpdateChecked

from .state import JobMemory

__all__ = ["MAX_DISTANCE", "checked_task", "partners", "summed_on_arrival", "verdict"]

MAX_DISTANCE = 1e9
"""Distances are recorded up to this (``inf``, tensors that do not match, is not JSON)."""


def checked_task(state: JobMemory, task_id: str) -> str | None:
    """The checked task of ``task_id``'s check group (itself, if it is the checked one);
    ``None`` when the task is in no group."""
    task = state.tasks.get(task_id)
    if task is None:
        return None
    if task.checks is not None:
        return task.checks
    return task_id if task_id in state.checks_of else None


def summed_on_arrival(state: JobMemory, accepted: UpdateAccepted) -> bool:
    """Whether an accepted update goes into the open round's running sum as it arrives:
    not a check's (compared, never summed), nor, in an asynchronous job, a checked
    task's (it waits out of the buffer for its verdict, so the round that includes it is
    made from what it includes)."""
    if accepted.checks is not None:
        return False
    asynchronous = state.configured is not None and state.configured.aggregation.is_async
    return not (asynchronous and accepted.task_id in state.checks_of)


def partners(state: JobMemory, accepted: UpdateAccepted) -> list[UpdateAccepted]:
    """The accepted updates of ``accepted``'s check group to compare it with (in the
    group's order: the checked task's first)."""
    checked = checked_task(state, accepted.task_id)
    if checked is None:
        return []
    members = [checked, *state.checks_of.get(checked, ())]
    found = (state.by_task.get(m) for m in members if m != accepted.task_id)
    return [
        u
        for u in found
        if u is not None and (u.round, u.attempt) == (accepted.round, accepted.attempt)
    ]


def verdict(
    state: JobMemory,
    new: UpdateAccepted,
    other: UpdateAccepted,
    distance: float,
    tolerance: float,
) -> UpdateChecked:
    """The comparison of ``new`` with ``other`` (accepted before it). All-zero updates
    never agree: two peers that both did nothing confirm nothing."""
    zero = new.norm == 0.0 or other.norm == 0.0
    recorded = distance if math.isfinite(distance) else MAX_DISTANCE
    return UpdateChecked(
        job_id=new.job_id,
        round=new.round,
        attempt=new.attempt,
        shard=new.shard,
        checked=checked_task(state, new.task_id) or other.task_id,
        task_id=other.task_id,
        peer_id=other.peer_id,
        other_task_id=new.task_id,
        other_peer_id=new.peer_id,
        distance=min(recorded, MAX_DISTANCE),
        tolerance=tolerance,
        agree=not zero and distance <= tolerance,
    )
