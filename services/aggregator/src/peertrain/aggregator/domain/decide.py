"""Deciding what an announced update is, before anything is downloaded (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from peertrain.common.events.tasks import UpdateAnnounced
from peertrain.common.events.training import RoundOpened, TaskAssigned

from . import codes
from .buffered import too_stale
from .state import JobMemory

__all__ = [
    "MAX_STRIKES_RECORDED",
    "Candidate",
    "Decision",
    "Duplicate",
    "Ignored",
    "Refusal",
    "decide_update",
]


@dataclass(frozen=True)
class Candidate:
    """Worth downloading: the task, its round's opening and the weight to fold with."""

    task: TaskAssigned
    opened: RoundOpened
    weight: float


@dataclass(frozen=True)
class Refusal:
    """Refused with a code (recorded as ``update.rejected``)."""

    code: str
    reason: str
    stale: bool = False
    """The state may be behind the log on what decided it: decide again caught up."""


@dataclass(frozen=True)
class Duplicate:
    """Already decided: acknowledge, no second effect."""

    reason: str


@dataclass(frozen=True)
class Ignored:
    """Nothing to record it against (no such job): acknowledge and log only."""

    reason: str
    stale: bool = False
    """The state may be behind the log on what decided it: decide again caught up."""


Decision = Candidate | Refusal | Duplicate | Ignored

MAX_STRIKES_RECORDED = 20
"""Refusals counted against one peer that are recorded per job; more are only counted
and logged (the orchestrator excludes a peer long before: ``exclude_after``)."""


def decide_update(state: JobMemory, peer_id: str, body: UpdateAnnounced) -> Decision:
    """What to do with ``peer_id``'s announcement ``body``, given the job's state."""
    if state.configured is None:
        return Ignored(f"job {body.job_id!r} is not configured", stale=True)
    # Nothing is recorded for a sender that is not the job's, for an ended job, or for
    # a peer already excluded or with its strikes used up: a peer cannot grow a job's
    # log (or any job's it knows the id of) with refusals.
    if peer_id not in state.peers:
        return Ignored("the sender is not one of the job's peers")
    if state.ended is not None:
        return Ignored(f"the job has ended ({state.ended})")
    if peer_id in state.excluded:
        return Ignored("the sender is excluded from the job")
    if state.strikes.get(peer_id, 0) >= MAX_STRIKES_RECORDED:
        return Ignored("the sender's refusals are already on record")
    if (body.task_id, peer_id) in state.decided:
        return Duplicate(f"task {body.task_id} already has a decision for this sender")
    task = state.tasks.get(body.task_id)
    checking = task is not None and task.checks is not None  # compared, not summed
    asynchronous = state.configured.aggregation.is_async
    # an asynchronous round may take several updates of one shard (one task at a time);
    # a task not known yet is read on first (it may be a check, or a tie-break, whose
    # task.assigned this instance has not heard yet)
    shard_done = (body.round, body.attempt, body.shard) in state.accepted
    if task is not None and not (checking or asynchronous) and shard_done:
        return Duplicate(
            f"round {body.round} attempt {body.attempt} shard {body.shard} already has an update"
        )
    if task is None:
        return Refusal(codes.UNKNOWN_TASK, f"task {body.task_id} was never assigned", stale=True)
    if task.peer_id != peer_id:
        return Refusal(codes.WRONG_PEER, f"task {task.task_id} is not assigned to this peer")
    if (task.round, task.attempt, task.shard) != (body.round, body.attempt, body.shard):
        return Refusal(
            codes.TASK_MISMATCH,
            f"task {task.task_id} is round {task.round} attempt {task.attempt} "
            f"shard {task.shard}, not what the announcement says",
        )
    if task.task_id in state.lost:
        return Refusal(codes.TASK_LOST, f"task {task.task_id} was lost (reassigned or expired)")
    opened = state.opened.get((task.round, task.attempt))
    if opened is None or not (asynchronous or state.is_open(task.round, task.attempt)):
        return Refusal(
            codes.ROUND_NOT_OPEN, f"round {task.round} attempt {task.attempt} is not open"
        )
    if asynchronous and (stale := too_stale(state, opened)) is not None:
        return Refusal(*stale)
    if body.key != task.update_key:
        return Refusal(codes.WRONG_KEY, f"the update must be at {task.update_key}")
    rows = state.shard_rows(task.shard)
    if rows is None:
        return Refusal(codes.TASK_MISMATCH, f"shard {task.shard} is not part of the job")
    return Candidate(task, opened, float(rows))
