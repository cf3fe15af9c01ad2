"""One job: its state folded from the log, the rules on its tasks, its configuration.

The state is a pure fold of three streams: the job's own (``job:<id>``, written here),
its sharding outcome (``sharding:<id>``, the dataset service's) and its model events
(``model:<id>``, the aggregator's). What runs the rounds is in :mod:`.rounds`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from peertrain.common.events import EventData, RecordedEvent
from peertrain.common.events.datasets import DatasetSharded, DatasetShardingFailed
from peertrain.common.events.models import (
    CHECK_MISMATCH,
    NORM_OUTLIER,
    NUMERIC_REFUSALS,
    ModelDiverged,
    ModelEvaluated,
    ModelExported,
    ModelVersionCreated,
    UpdateAccepted,
    UpdateChecked,
    UpdateRejected,
)
from peertrain.common.events.training import (
    DroppedUpdate,
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
    RoundWaiting,
    ShardPlan,
    TaskAccepted,
    TaskAssigned,
    TaskFailed,
    TaskLost,
    TaskProgress,
)
from peertrain.common.security import Principal
from peertrain.common.specs import TrainingParams, derive_seed

from .checks import MAX_GROUP, Resolution, resolve
from .errors import JobStateConflict

__all__ = [
    "Dispatch",
    "Job",
    "JobState",
    "Round",
    "Task",
    "decide_cancel",
    "decide_configured",
    "withdrawn",
]

JobState = Literal["sharding", "running", "completed", "failed", "cancelled"]
TaskStateName = Literal["assigned", "accepted", "updated", "rejected", "failed", "lost"]
OPEN_TASK_STATES = ("assigned", "accepted")


@dataclass
class Task:
    """One shard's training in one round, by one peer."""

    task_id: str
    round: int
    attempt: int
    shard: int
    peer_id: str
    update_key: str
    deadline: datetime
    assigned_at: datetime
    reassigned_from: str | None = None
    state: TaskStateName = "assigned"
    replaced: bool = False
    """Another task took over this one's shard."""
    device: str | None = None
    error: str | None = None
    traceback: str | None = None
    epoch: int = 0
    """The last local epoch its peer reported done."""
    epochs_reported: set[int] = field(default_factory=set)
    """The local epochs whose progress is on record (each at most once)."""
    lost_reason: str | None = None
    """Why it was lost (``task.lost`` ``reason``), once it was."""
    updated_at: datetime | None = None
    """When the aggregator accepted its update (the event's time: durations measured on
    the log are the same on every replay)."""
    checks: str | None = None
    """The task this one checks (``aggregation.verify``): its update is compared with
    that task's, and is the shard's only if it is confirmed and that one is not."""

    @property
    def open(self) -> bool:
        """Still expected to deliver an update."""
        return self.state in OPEN_TASK_STATES

    @property
    def acceptable(self) -> bool:
        """Its peer may still say it took it on (``task.accepted``)."""
        return self.state == "assigned"


@dataclass
class Round:
    """One attempt at one round."""

    round: int
    attempt: int
    model_version: int
    model_key: str
    model_sha256: str
    deadline: datetime
    opened_at: datetime
    tasks: dict[str, Task] = field(default_factory=dict)
    accepted: dict[int, IncludedUpdate] = field(default_factory=dict)
    norms: dict[int, float] = field(default_factory=dict)
    """The L2 norm of each accepted update, by shard (outliers are left out at close)."""
    sizes: dict[int, tuple[int, int | None]] = field(default_factory=dict)
    """Each accepted update's bytes as uploaded and in float32 (``dense_size``), by shard."""
    state: Literal["open", "closed", "failed"] = "open"
    closed_at: datetime | None = None
    close_reason: str | None = None
    failed: RoundFailed | None = None
    """How it failed (its retry and when), once it did."""
    numeric: list[UpdateRejected] = field(default_factory=list)
    """Its updates refused for their numbers (``NUMERIC_REFUSALS``): strikes only once
    the round closed with an honest majority (``honest``)."""
    honest: bool = False
    """Closed with more accepted updates than numeric refusals: those count as strikes."""
    checked_updates: dict[str, tuple[IncludedUpdate, float]] = field(default_factory=dict)
    """Accepted updates of check tasks (never summed unless they replace the checked
    one), with their norms, by task id."""
    verdicts: dict[frozenset[str], bool] = field(default_factory=dict)
    """The aggregator's comparisons (``update.checked``): whether two tasks agreed."""
    settled: dict[str, Resolution] = field(default_factory=dict)
    """Check groups decided, by the checked task's id."""
    included: tuple[IncludedUpdate, ...] = ()
    """What its version aggregates (``round.closed`` ``included``), once it closed."""

    def group(self, checked: str) -> list[str]:
        """The check group of task ``checked``: it, its check, its tie-break."""
        return [checked, *(t.task_id for t in self.tasks.values() if t.checks == checked)]

    def disputed(self) -> list[str]:
        """Checked tasks whose group was compared in full without a decision: another
        tie-break is due (up to ``MAX_GROUP`` tasks)."""
        found = (
            checked
            for pair, agreed in self.verdicts.items()
            if not agreed
            for checked in sorted(pair)
            if checked not in self.settled
            and checked in self.tasks
            and self.tasks[checked].checks is None
        )
        return [c for c in dict.fromkeys(found) if self._undecided(c)]

    def _undecided(self, checked: str) -> bool:
        members = self.group(checked)
        if not 2 <= len(members) < MAX_GROUP:
            return False
        pairs = (frozenset((a, b)) for i, a in enumerate(members) for b in members[i + 1 :])
        return all(p in self.verdicts for p in pairs) and resolve(members, self.verdicts) is None

    def checking(self, checked: str) -> bool:
        """Whether a check of task ``checked`` is under way: one open, or one whose
        comparisons are not all folded yet (its group not decided)."""
        if checked in self.settled:
            return False
        checks = [self.tasks[t] for t in self.group(checked)[1:]]
        return any(t.open for t in checks) or any(self._comparing(t.task_id) for t in checks)

    def tie_break_due(self, checked: str) -> bool:
        """Whether task ``checked``'s group was compared in full without a decision, and
        may take another member (see :meth:`disputed`)."""
        return checked not in self.settled and self._undecided(checked)

    def live(self, shard: int) -> Task | None:
        """The shard's latest task that was not lost (``None`` if all were)."""
        found = [t for t in self.tasks.values() if t.shard == shard and t.state != "lost"]
        return found[-1] if found else None

    def shard_resolved(self, shard: int) -> bool:
        """Accepted, or no task of it can deliver any more; and no check of it open or
        waiting for its verdict."""
        mine = [t for t in self.tasks.values() if t.shard == shard]
        if any(t.open and t.checks is not None for t in mine):
            return False
        if any(self._comparing(t.task_id) for t in mine if t.checks is not None):
            return False
        return shard in self.accepted or not any(t.open for t in mine)

    def _comparing(self, check: str) -> bool:
        """A check whose update is in and whose comparisons are not all folded yet (they
        come in the append after the update's, or in the same one, folded after it)."""
        task = self.tasks[check]
        if task.state != "updated" or task.checks is None or task.checks in self.settled:
            return False
        done = [m for m in self.group(task.checks) if self.tasks[m].state == "updated"]
        return any(frozenset((check, m)) not in self.verdicts for m in done if m != check)

    def open_load(self, peer_id: str) -> int:
        """Open tasks of ``peer_id`` in this round."""
        return sum(1 for t in self.tasks.values() if t.peer_id == peer_id and t.open)


@dataclass
class Job:
    """Everything the orchestrator knows of one job."""

    job_id: str
    version: int = 0
    """``seq`` of the last applied event of ``job:<id>``."""
    model_seq: int = 0
    created: JobCreated | None = None
    created_at: datetime | None = None
    sharded: DatasetSharded | None = None
    sharding_failed: DatasetShardingFailed | None = None
    configured: JobConfigured | None = None
    rounds: dict[tuple[int, int], Round] = field(default_factory=dict)
    current: Round | None = None
    versions: dict[int, ModelVersionCreated] = field(default_factory=dict)
    evaluations: dict[int, ModelEvaluated] = field(default_factory=dict)
    exported: ModelExported | None = None
    progress: list[TaskProgress] = field(default_factory=list)
    """Every local epoch its peers reported, one each (a report of several is split)."""
    rejected: list[UpdateRejected] = field(default_factory=list)
    strikes: dict[str, list[UpdateRejected]] = field(default_factory=dict)
    """The job's peers' refusals that count against them (``update.rejected`` with
    ``strike``), by peer."""
    excluded: dict[str, PeerExcluded] = field(default_factory=dict)
    confirmations: dict[str, int] = field(default_factory=dict)
    """Checked tasks of each peer (its own, not those it checked) whose update another
    peer's confirmed."""
    missed_checks: dict[str, int] = field(default_factory=dict)
    """Checks (and tie-breaks) each peer held until their deadline ended them: the peer
    whose update waited for one waited in vain, so such a peer checks others last."""
    waiting: RoundWaiting | None = None
    """The round attempt waiting for peers to come online, until it opens."""
    diverged: ModelDiverged | None = None
    """A model version the aggregator found non-finite: the job fails."""
    terminal: Literal["completed", "failed", "cancelled"] | None = None
    error: str | None = None
    error_code: str | None = None
    finished_at: datetime | None = None
    tasks_assigned: int = 0
    update_sizes: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    """Asynchronous rounds: each accepted update's bytes as uploaded and in float32, by
    task (a buffer's updates come from any round; a synchronous round keeps its own)."""
    buffer: list[IncludedUpdate] = field(default_factory=list)
    """Asynchronous rounds: the accepted updates no closed round has included yet, in the
    order they were accepted (the model stream's order); see :mod:`.buffered`."""

    # -- reading -----------------------------------------------------------------------

    @property
    def state(self) -> JobState:
        """Where the job is."""
        if self.terminal is not None:
            return self.terminal
        return "running" if self.configured is not None else "sharding"

    @property
    def is_async(self) -> bool:
        """Configured with buffered asynchronous rounds (``aggregation.mode: async``)."""
        return self.configured is not None and self.configured.aggregation.is_async

    @property
    def owner_id(self) -> str | None:
        """Who created it."""
        return self.created.owner_id if self.created else None

    @property
    def rounds_total(self) -> int:
        """Rounds the job runs."""
        if self.configured is not None:
            return self.configured.rounds
        if self.created is not None:
            return self.created.training.rounds
        return 0

    @property
    def local_epochs(self) -> int:
        """Epochs each task trains (``training.local_epochs``)."""
        training = self.configured.training if self.configured else TrainingParams()
        return training.local_epochs

    def task(self, task_id: str) -> Task | None:
        """A task of the current round attempt."""
        return self.current.tasks.get(task_id) if self.current else None

    def find_task(self, task_id: str) -> Task | None:
        """A task of any round."""
        for rnd in self.rounds.values():
            if task_id in rnd.tasks:
                return rnd.tasks[task_id]
        return None

    def task_of(self, task_id: str, peer_id: str) -> Task | None:
        """A task of any round, if it is ``peer_id``'s (a peer speaks for its own only)."""
        task = self.find_task(task_id)
        return task if task is not None and task.peer_id == peer_id else None

    def shard_plan(self, shard: int) -> ShardPlan | None:
        """The configured plan of one shard (``None`` before ``job.configured``)."""
        if self.configured is None:
            return None
        return next((s for s in self.configured.shards if s.index == shard), None)

    @property
    def active(self) -> bool:
        """Created and not ended: facts and the clock may still move it."""
        return self.terminal is None and self.created is not None

    def runs_with(self, peer_id: str) -> bool:
        """Active, with ``peer_id`` among its peers."""
        return self.active and peer_id in self.created.peers  # type: ignore[union-attr]

    @property
    def needs_configuration(self) -> bool:
        """Sharded, not configured yet, not ended: ``config.json`` is to be written."""
        return self.terminal is None and self.sharded is not None and self.configured is None

    def visible_to(self, who: Principal) -> bool:
        """Created, and ``who`` is its owner or an admin."""
        return self.created is not None and (who.is_admin or self.owner_id == who.subject)

    def dispatch(self, task_id: str) -> Dispatch | None:
        """What the task's message is built from; ``None`` when there is nothing to send
        any more (the job ended, the task was lost or answered, its round closed)."""
        task = self.find_task(task_id)
        if task is None or self.terminal is not None or not task.open:
            return None
        rnd = self.rounds.get((task.round, task.attempt))
        conf = self.configured
        version = self.versions.get(rnd.model_version) if rnd else None
        # an asynchronous task outlives its round: it is folded into a later buffer
        if rnd is None or conf is None or version is None:
            return None
        if rnd.state != "open" and not (self.is_async and rnd.state == "closed"):
            return None
        plan = next(s for s in conf.shards if s.index == task.shard)
        return Dispatch(task, rnd, version, plan, conf)

    # -- folding -----------------------------------------------------------------------

    def apply(self, event: RecordedEvent) -> bool:
        """Fold one event of the job's streams; ``False`` if it was already applied."""
        if event.stream.startswith("job:"):
            if event.seq <= self.version:
                return False
            self.version = event.seq
            self._apply_own(event)
            return True
        if event.stream.startswith("model:"):
            if event.seq <= self.model_seq:
                return False
            self.model_seq = event.seq
            self._apply_model(event.data, event.occurred_at)
            return True
        if event.stream.startswith("sharding:"):
            if isinstance(event.data, DatasetSharded) and self.sharded is None:
                self.sharded = event.data
                return True
            if isinstance(event.data, DatasetShardingFailed) and self.sharding_failed is None:
                self.sharding_failed = event.data
                return True
        return False

    def _apply_own(self, event: RecordedEvent) -> None:
        data = event.data
        at = event.occurred_at
        if isinstance(data, JobCreated):
            self.created = data
            self.created_at = at
        elif isinstance(data, JobConfigured):
            self.configured = data
        elif isinstance(data, RoundOpened):
            opened = Round(
                data.round,
                data.attempt,
                data.model_version,
                data.model_key,
                data.model_sha256,
                data.deadline,
                at,
            )
            self.rounds[(data.round, data.attempt)] = opened
            self.current = opened
            self.waiting = None
        elif isinstance(data, RoundWaiting):
            self.waiting = data
        elif isinstance(data, TaskAssigned):
            self.tasks_assigned += 1
            rnd = self.rounds.get((data.round, data.attempt))
            if rnd is not None:
                if data.reassigned_from in rnd.tasks:
                    rnd.tasks[data.reassigned_from].replaced = True
                rnd.tasks[data.task_id] = Task(
                    data.task_id,
                    data.round,
                    data.attempt,
                    data.shard,
                    data.peer_id,
                    data.update_key,
                    data.deadline,
                    at,
                    data.reassigned_from,
                    checks=data.checks,
                )
        elif isinstance(data, TaskAccepted):
            task = self.find_task(data.task_id)
            if task is not None and task.acceptable:
                task.state = "accepted"
            if task is not None and task.device is None:
                task.device = data.device  # (also of a task whose update came first)
        elif isinstance(data, TaskProgress):
            each = data.by_epoch()
            self.progress += each
            task = self.find_task(data.task_id)
            if task is not None:
                task.epoch = max(task.epoch, data.epoch)
                task.epochs_reported.update(e.epoch for e in each)
        elif isinstance(data, TaskFailed):
            task = self.find_task(data.task_id)
            if task is not None and task.open:
                task.state = "failed"
                task.error = data.error
                task.traceback = data.traceback
        elif isinstance(data, TaskLost):
            task = self.find_task(data.task_id)
            if task is not None and (task.open or withdrawn(self, task)):
                if task.state == "updated":  # an excluded peer's update leaves its round
                    rnd = self.rounds[(task.round, task.attempt)]
                    if (inc := rnd.accepted.get(task.shard)) and inc.task_id == task.task_id:
                        del rnd.accepted[task.shard]
                        rnd.norms.pop(task.shard, None)
                task.state = "lost"
                task.lost_reason = data.reason
                task.error = f"lost: {data.reason}"
                if task.checks is not None and data.reason == "deadline":
                    self.missed_checks[task.peer_id] = self.missed_checks.get(task.peer_id, 0) + 1
        elif isinstance(data, RoundClosed | RoundFailed):
            rnd = self.rounds.get((data.round, data.attempt))
            if rnd is not None:
                rnd.state = "closed" if isinstance(data, RoundClosed) else "failed"
                if isinstance(data, RoundClosed):
                    rnd.included = data.included
                rnd.closed_at = at
                rnd.close_reason = data.reason if isinstance(data, RoundClosed) else "too_few"
                if isinstance(data, RoundFailed):
                    rnd.failed = data
                    return
                if self.is_async:
                    # its updates' bytes, by place (a buffer may hold a shard twice)
                    rnd.sizes = {
                        i: self.update_sizes.pop(u.task_id)
                        for i, u in enumerate(data.included)
                        if u.task_id in self.update_sizes
                    }
                    self._unbuffer(data)
                for out in data.dropped:
                    self._strike(_dropped_refusal(data, out))
                if len(data.included) > len(rnd.numeric):  # an honest majority
                    rnd.honest = True
                    for refused in rnd.numeric:
                        self._strike(refused)
        elif isinstance(data, PeerExcluded):
            self.excluded.setdefault(data.peer_id, data)
            # what an excluded peer sent is not aggregated (as in a synchronous round)
            self.buffer = [u for u in self.buffer if u.peer_id != data.peer_id]
        elif isinstance(data, JobCompleted):
            self._end("completed", at)
        elif isinstance(data, JobFailed):
            self._end("failed", at)
            self.error, self.error_code = data.reason, data.code
        elif isinstance(data, JobCancelled):
            self._end("cancelled", at)
            self.error = f"cancelled by {data.by}"

    def _buffer(self, data: UpdateAccepted, rnd: Round) -> None:
        """Asynchronous rounds: an accepted update waits for a round to include it."""
        if data.peer_id in self.excluded or any(u.task_id == data.task_id for u in self.buffer):
            return
        self.buffer.append(
            IncludedUpdate(
                shard=data.shard,
                peer_id=data.peer_id,
                task_id=data.task_id,
                key=data.key,
                sha256=data.sha256,
                base_version=rnd.model_version,
            )
        )

    def _unbuffer(self, closed: RoundClosed) -> None:
        """Asynchronous rounds: what ``closed`` included leaves the buffer, and so does
        what would be too stale for the next round (built on version ``closed.round``)."""
        assert self.configured is not None
        included = {u.task_id for u in closed.included}
        oldest = closed.round - self.configured.aggregation.max_staleness
        self.buffer = [
            u for u in self.buffer if u.task_id not in included and (u.base_version or 0) >= oldest
        ]
        kept = {u.task_id for u in self.buffer}
        for task_id in [t for t in self.update_sizes if t not in kept]:
            # never aggregated now (too stale, or a check no struck update needed)
            if not self._may_swap_in(task_id):
                del self.update_sizes[task_id]

    def _may_swap_in(self, task_id: str) -> bool:
        """A check's update whose group is not decided yet (it may take a struck update's
        place in the buffer)."""
        task = self.find_task(task_id)
        if task is None or task.checks is None:
            return False
        rnd = self.rounds.get((task.round, task.attempt))
        return rnd is not None and task.checks not in rnd.settled

    def _end(self, state: Literal["completed", "failed", "cancelled"], at: datetime) -> None:
        self.terminal = state
        self.finished_at = at
        self.waiting = None

    def _strike(self, refused: UpdateRejected) -> None:
        """Count a refusal against its peer (one of the job's)."""
        if self.created is not None and refused.peer_id in self.created.peers:
            self.strikes.setdefault(refused.peer_id, []).append(refused)

    def _checked(self, data: UpdateChecked) -> None:
        """Fold a comparison; once its group is decided, count confirmations and strikes,
        and put a confirmed update in place of a struck checked one (its round open)."""
        rnd = self.rounds.get((data.round, data.attempt))
        if rnd is None:
            return
        rnd.verdicts[frozenset((data.task_id, data.other_task_id))] = data.agree
        if data.checked in rnd.settled or data.checked not in rnd.tasks:
            return
        res = resolve(rnd.group(data.checked), rnd.verdicts)
        if res is None:
            return
        rnd.settled[data.checked] = res
        # probation counts the peer's own checked tasks only: one honest task is no
        # proof (a replaying peer's first is honest), agreeing as a checker neither
        if data.checked in res.confirmed:
            peer = rnd.tasks[data.checked].peer_id
            self.confirmations[peer] = self.confirmations.get(peer, 0) + 1
        for task_id in res.struck:
            self._strike(_mismatch_refusal(self.job_id, rnd, rnd.tasks[task_id], res))
        if self.is_async:
            self._swap_buffered(rnd, data.checked, res)
            return
        inc = rnd.accepted.get(data.shard)
        if data.checked in res.struck and rnd.state == "open" and inc is not None:
            if inc.task_id != data.checked:
                return
            swap = next(
                (rnd.checked_updates[t] for t in res.confirmed if t in rnd.checked_updates), None
            )
            if swap is None:
                del rnd.accepted[data.shard]
                rnd.norms.pop(data.shard, None)
            else:
                rnd.accepted[data.shard], rnd.norms[data.shard] = swap

    def _swap_buffered(self, rnd: Round, checked: str, res: Resolution) -> None:
        """Asynchronous rounds: a struck checked task's buffered update makes way for a
        confirmed one of its group, in its place (one update per task is aggregated)."""
        if checked not in res.struck:
            return
        at = next((i for i, u in enumerate(self.buffer) if u.task_id == checked), None)
        if at is None:
            return
        swap = next(
            (rnd.checked_updates[t] for t in res.confirmed if t in rnd.checked_updates), None
        )
        if swap is None:
            del self.buffer[at]
        else:
            self.buffer[at] = swap[0].model_copy(
                update={"base_version": self.buffer[at].base_version}
            )

    def _apply_model(self, data: object, at: datetime) -> None:
        if isinstance(data, UpdateAccepted):
            rnd = self.rounds.get((data.round, data.attempt))
            if rnd is None:
                return
            task = rnd.tasks.get(data.task_id)
            if task is not None and task.peer_id != data.peer_id:
                return  # the aggregator accepts only the task's peer; never fold otherwise
            if task is not None and task.state != "lost":
                task.state = "updated"
                task.updated_at = at
            if task is not None and task.checks is not None:  # compared, not summed
                rnd.checked_updates[task.task_id] = (_included(data), data.norm)
                if self.is_async:  # it may take a struck update's place in the buffer
                    self.update_sizes[data.task_id] = (data.size, data.dense_size)
                return
            if self.is_async:
                if task is not None and task.state == "updated":
                    self._buffer(data, rnd)
                    self.update_sizes[data.task_id] = (data.size, data.dense_size)
                return
            if rnd.state == "open" and data.shard not in rnd.accepted:
                rnd.accepted[data.shard] = _included(data)
                rnd.norms[data.shard] = data.norm
                rnd.sizes[data.shard] = (data.size, data.dense_size)
        elif isinstance(data, UpdateChecked):
            self._checked(data)
        elif isinstance(data, UpdateRejected):
            self.rejected.append(data)
            if data.strike:
                self._strike(data)
            elif data.code in NUMERIC_REFUSALS:
                # a diverging job's honest peers all send such updates: they count
                # against a peer only where the round's majority was accepted
                rnd = self.rounds.get((data.round, data.attempt))
                if rnd is not None:
                    rnd.numeric.append(data)
                    if rnd.honest:  # refused after its round closed (a late verdict)
                        self._strike(data)
            task = self.find_task(data.task_id)
            # Only the task's own peer can change its state: a refusal of another
            # peer's announcement about it (``wrong_peer``: task ids can be guessed)
            # never touches the victim's task.
            if task is not None and task.open and task.peer_id == data.peer_id:
                task.state = "rejected"
                task.error = f"update rejected ({data.code}): {data.reason}"
        elif isinstance(data, ModelVersionCreated):
            self.versions[data.version] = data
        elif isinstance(data, ModelEvaluated):
            self.evaluations[data.version] = data
        elif isinstance(data, ModelDiverged):
            if self.diverged is None:
                self.diverged = data
        elif isinstance(data, ModelExported):
            self.exported = data


def _included(data: UpdateAccepted) -> IncludedUpdate:
    return IncludedUpdate(
        shard=data.shard,
        peer_id=data.peer_id,
        task_id=data.task_id,
        key=data.key,
        sha256=data.sha256,
    )


def _mismatch_refusal(job_id: str, rnd: Round, task: Task, res: Resolution) -> UpdateRejected:
    """The strike of a checked task's member that the others did not confirm."""
    others = ", ".join(rnd.tasks[t].peer_id for t in res.confirmed)
    return UpdateRejected(
        job_id=job_id,
        round=task.round,
        attempt=task.attempt,
        shard=task.shard,
        task_id=task.task_id,
        peer_id=task.peer_id,
        code=CHECK_MISMATCH,
        reason=f"its update of a checked task disagrees with {others}'s, which agree",
        strike=True,
    )


def _dropped_refusal(closed: RoundClosed, out: DroppedUpdate) -> UpdateRejected:
    """The strike a norm outlier left out of its round counts as."""
    return UpdateRejected(
        job_id=closed.job_id,
        round=closed.round,
        attempt=closed.attempt,
        shard=out.shard,
        task_id=out.task_id,
        peer_id=out.peer_id,
        code=NORM_OUTLIER,
        reason=(
            f"L2 norm {out.norm:.4g} is over {out.bound:.4g}, the bound relative to the "
            "median of its round"
        ),
        strike=True,
    )


def withdrawn(job: Job, task: Task) -> bool:
    """An accepted update of an excluded peer in a round still open: to be taken out."""
    if task.state != "updated" or task.peer_id not in job.excluded:
        return False
    rnd = job.rounds.get((task.round, task.attempt))
    return rnd is not None and rnd.state == "open"


@dataclass(frozen=True)
class Dispatch:
    """A task to send, with what its message names."""

    task: Task
    round: Round
    version: ModelVersionCreated
    plan: ShardPlan
    configured: JobConfigured

    @property
    def training(self) -> TrainingParams:
        """The ``training`` block the task carries: the job's own (FedProx's ``proximal_mu``
        is one of its fields, so peers and the server read the same value)."""
        return self.configured.training

    @property
    def seed(self) -> int:
        """The task's training seed: the job's seed, the round and the shard; in an
        asynchronous job, also how many of the shard's tasks in the round gave an
        accepted update before it (a peer training its shard again on a newer version
        draws other batches; a retry after a refusal keeps the seed, so an honest retry
        gives the honest update)."""
        seed, round_, shard = self.configured.training.seed, self.task.round, self.task.shard
        if self.configured.aggregation.is_async:
            done = 0  # a check (or tie-break) trains with the seed of the task it checks
            for t in self.round.tasks.values():
                if t.task_id == (self.task.checks or self.task.task_id):
                    break
                done += t.shard == shard and t.state == "updated" and t.checks is None
            if done:
                return derive_seed(seed, round_, shard, done)
        return derive_seed(seed, round_, shard)


def decide_cancel(job: Job, by: str) -> list[EventData]:
    """``job.cancelled``, by ``by``.

    Raises
    ------
    JobStateConflict
        The job has already ended (409).
    """
    if job.terminal is not None:
        raise JobStateConflict(
            f"job {job.job_id!r} is already {job.terminal}", detail={"state": job.terminal}
        )
    return [JobCancelled(job_id=job.job_id, by=by)]


def decide_configured(job: Job, configured: JobConfigured) -> list[EventData]:
    """``configured``, unless the job was configured meanwhile or has ended."""
    return [configured] if job.configured is None and job.terminal is None else []
