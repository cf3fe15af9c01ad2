"""One job as the aggregator sees it, folded from ``job:<id>`` and ``model:<id>``.

Pure: no I/O. The shell reads the two streams from the log and feeds them to
:meth:`JobMemory.apply`; the state is thus always rebuildable from the log (after a
restart, or when an update names a task this process has not seen yet).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from peertrain.common.events import RecordedEvent
from peertrain.common.events.models import (
    ModelDiverged,
    ModelEvaluated,
    ModelExported,
    ModelVersionCreated,
    UpdateAccepted,
    UpdateRejected,
)
from peertrain.common.events.training import (
    IncludedUpdate,
    JobCancelled,
    JobCompleted,
    JobConfigured,
    JobCreated,
    JobFailed,
    PeerExcluded,
    RoundClosed,
    RoundFailed,
    RoundOpened,
    TaskAssigned,
    TaskLost,
)

__all__ = ["JobMemory", "RoundKey", "VersionInfo"]

RoundKey = tuple[int, int]
"""(round, attempt)."""


@dataclass
class VersionInfo:
    """A stored model version, and its evaluation once there is one."""

    created: ModelVersionCreated
    created_at: datetime
    evaluation: ModelEvaluated | None = None
    evaluated_at: datetime | None = None
    diverged: ModelDiverged | None = None
    """Found non-finite instead of evaluated: nothing is made from it."""

    @property
    def assessed(self) -> bool:
        """Evaluated, or found non-finite: nothing more to do with it."""
        return self.evaluation is not None or self.diverged is not None


@dataclass
class JobMemory:
    """What the aggregator knows about one job.

    ``job_seq`` and ``model_seq`` are the last ``seq`` folded from each stream: the
    positions to read on from, and ``model_seq`` the expected version of the next
    append to ``model:<job>``.
    """

    job_id: str
    job_seq: int = 0
    model_seq: int = 0
    owner_id: str | None = None
    name: str | None = None
    """The job's name (``job.created``), for the files users download."""
    peers: frozenset[str] = frozenset()
    """The job's peers (``job.created``): nobody else's announcements are recorded."""
    excluded: set[str] = field(default_factory=set)
    strikes: dict[str, int] = field(default_factory=dict)
    """Refusals on record that count against each peer."""
    configured: JobConfigured | None = None
    ended: str | None = None
    """The terminal event type (job.completed/failed/cancelled), once there is one."""
    opened: dict[RoundKey, RoundOpened] = field(default_factory=dict)
    closed: dict[RoundKey, RoundClosed] = field(default_factory=dict)
    failed: set[RoundKey] = field(default_factory=set)
    tasks: dict[str, TaskAssigned] = field(default_factory=dict)
    round_tasks: dict[RoundKey, list[str]] = field(default_factory=dict)
    """The task ids each round attempt gave out."""
    lost: set[str] = field(default_factory=set)
    accepted: dict[tuple[int, int, int], UpdateAccepted] = field(default_factory=dict)
    """(round, attempt, shard) -> the update accepted for it (in an asynchronous job,
    the last of the shard's in the round: :attr:`by_task` has each; a check's is not
    here: it is compared, not summed)."""
    by_task: dict[str, UpdateAccepted] = field(default_factory=dict)
    """Every accepted update (checks' included), by task id."""
    checks_of: dict[str, list[str]] = field(default_factory=dict)
    """Checked task id -> the tasks that check it (its check, its tie-break)."""
    decided: set[tuple[str, str]] = field(default_factory=set)
    """(task_id, sender) pairs with a decision (accepted or rejected) on record: one
    decision per task and sender, so a peer naming another's task cannot block it."""
    versions: dict[int, VersionInfo] = field(default_factory=dict)
    exported: ModelExported | None = None

    # -- folding ----------------------------------------------------------------------

    def apply(self, event: RecordedEvent) -> None:
        """Fold one event of either stream (in stream order); a job event already folded
        is skipped (the model stream's are the repository's to skip: its version)."""
        if event.stream.startswith("model:"):
            self.model_seq = max(self.model_seq, event.seq)
            self._apply_model(event)
        elif event.seq > self.job_seq:
            self.job_seq = event.seq
            self._apply_job(event)

    def _apply_job(self, event: RecordedEvent) -> None:
        data = event.data
        if isinstance(data, JobCreated):
            self.owner_id = data.owner_id
            self.name = data.name
            self.peers = frozenset(data.peers)
        elif isinstance(data, PeerExcluded):
            self.excluded.add(data.peer_id)
        elif isinstance(data, JobConfigured):
            self.configured = data
        elif isinstance(data, RoundOpened):
            self.opened[(data.round, data.attempt)] = data
        elif isinstance(data, TaskAssigned):
            self.tasks[data.task_id] = data
            self.round_tasks.setdefault((data.round, data.attempt), []).append(data.task_id)
            if data.checks is not None:
                self.checks_of.setdefault(data.checks, []).append(data.task_id)
        elif isinstance(data, TaskLost):
            self.lost.add(data.task_id)
            if data.reason == "excluded":  # its update, if accepted, leaves the open round
                for key, accepted in list(self.accepted.items()):
                    if accepted.task_id == data.task_id:
                        del self.accepted[key]
        elif isinstance(data, RoundClosed):
            self.closed[(data.round, data.attempt)] = data
        elif isinstance(data, RoundFailed):
            self.failed.add((data.round, data.attempt))
        elif isinstance(data, JobCompleted | JobFailed | JobCancelled):
            self.ended = event.type

    def _apply_model(self, event: RecordedEvent) -> None:
        data = event.data
        if isinstance(data, UpdateAccepted):
            if data.checks is None:
                self.accepted[(data.round, data.attempt, data.shard)] = data
            self.by_task[data.task_id] = data
            self.decided.add((data.task_id, data.peer_id))
        elif isinstance(data, UpdateRejected):
            self.decided.add((data.task_id, data.peer_id))
            if data.strike:
                self.strikes[data.peer_id] = self.strikes.get(data.peer_id, 0) + 1
        elif isinstance(data, ModelVersionCreated):
            self.versions[data.version] = VersionInfo(data, event.occurred_at)
        elif isinstance(data, ModelEvaluated):
            info = self.versions.get(data.version)
            if info is not None:
                info.evaluation = data
                info.evaluated_at = event.occurred_at
        elif isinstance(data, ModelDiverged):
            info = self.versions.get(data.version)
            if info is not None:
                info.diverged = data
        elif isinstance(data, ModelExported):
            self.exported = data

    # -- questions --------------------------------------------------------------------

    def is_open(self, round_: int, attempt: int) -> bool:
        """Whether the round's attempt was opened and has not ended."""
        key = (round_, attempt)
        return key in self.opened and key not in self.closed and key not in self.failed

    def shard_rows(self, shard: int) -> int | None:
        """The shard's row count as sharding recorded it (the update's weight)."""
        if self.configured is None:
            return None
        for plan in self.configured.shards:
            if plan.index == shard:
                return plan.rows
        return None

    @property
    def diverged(self) -> bool:
        """A version was found non-finite: the job fails, nothing more is built on it."""
        return any(info.diverged is not None for info in self.versions.values())

    def latest_version(self) -> int | None:
        """The highest stored version."""
        return max(self.versions) if self.versions else None

    def accepted_of(self, closed: RoundClosed, inc: IncludedUpdate) -> UpdateAccepted | None:
        """The ``update.accepted`` of an update ``closed`` includes (an asynchronous
        round's may come from a task of an earlier round)."""
        found = self.by_task.get(inc.task_id)
        if found is not None and found.key == inc.key:
            return found
        return self.accepted.get((closed.round, closed.attempt, inc.shard))

    def complete_inputs(self, round_: int, attempt: int) -> list[UpdateAccepted] | None:
        """The updates of a round attempt once every task it gave out (but the lost and
        the checks) has one accepted, by shard: what the round includes when it closes
        complete; ``None`` while one is missing."""
        live = [
            self.tasks[t]
            for t in self.round_tasks.get((round_, attempt), ())
            if t not in self.lost and self.tasks[t].checks is None
        ]
        found = [self.accepted.get((round_, attempt, s)) for s in sorted({t.shard for t in live})]
        if not found or None in found:
            return None
        return [a for a in found if a is not None]

    def accepted_norms(self, closed: RoundClosed) -> dict[int, float]:
        """The recorded norm of each update a closed round includes, by shard."""
        found = (self.accepted_of(closed, u) for u in closed.included)
        return {a.shard: a.norm for a in found if a is not None}

    def stalled(self, now: datetime, grace: timedelta) -> bool:
        """Whether the log may hold what this state missed: model work it asks for is
        not done (a closed round without its version, a version not yet assessed), or
        an attempt seen open is past its deadline by ``grace`` (its ``round.closed``, or
        the job's end, may have been lost on the way here)."""
        if self.ended is not None or self.configured is None:
            return False
        if self.rounds_to_aggregate() or not all(v.assessed for v in self.versions.values()):
            return True
        return any(
            self.is_open(*key) and opened.deadline + grace < now
            for key, opened in self.opened.items()
        )

    def rounds_to_aggregate(self) -> list[RoundClosed]:
        """Closed rounds whose version is not stored yet, in round order."""
        pending = [c for c in self.closed.values() if c.round not in self.versions]
        return sorted(pending, key=lambda c: (c.round, c.attempt))
