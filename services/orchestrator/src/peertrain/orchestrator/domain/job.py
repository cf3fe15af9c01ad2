"""One job: its state folded from the log, and what should happen next.

The state is a pure fold of three streams: the job's own (``job:<id>``, written here),
its sharding outcome (``sharding:<id>``, the dataset service's) and its model events
(``model:<id>``, the aggregator's). :func:`reconcile` looks at a state and the peers
online now and returns the job events that should be appended next (possibly none). It
is idempotent: after a restart, replaying the streams and reconciling again gives the
same decisions, and a fact seen twice changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

from peertrain.common.events import EventData, RecordedEvent
from peertrain.common.events.datasets import DatasetSharded, DatasetShardingFailed
from peertrain.common.events.jobs import JobCreated
from peertrain.common.events.models import (
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
    JobFailed,
    PeerExcluded,
    RoundClosed,
    RoundFailed,
    RoundOpened,
    TaskAccepted,
    TaskAssigned,
    TaskFailed,
    TaskLost,
    TaskProgress,
    update_key,
)
from peertrain.common.specs import parse_aggregation_spec, parse_training_params

__all__ = ["Job", "JobState", "Round", "Task", "reconcile"]

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

    @property
    def open(self) -> bool:
        """Still expected to deliver an update."""
        return self.state in OPEN_TASK_STATES


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
    state: Literal["open", "closed", "failed"] = "open"
    closed_at: datetime | None = None
    close_reason: str | None = None

    def live(self, shard: int) -> Task | None:
        """The shard's latest task that was not lost (``None`` if all were)."""
        found = [t for t in self.tasks.values() if t.shard == shard and t.state != "lost"]
        return found[-1] if found else None

    def shard_resolved(self, shard: int) -> bool:
        """Accepted, or no task of it can deliver any more."""
        if shard in self.accepted:
            return True
        return not any(t.open for t in self.tasks.values() if t.shard == shard)

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
    rejected: list[UpdateRejected] = field(default_factory=list)
    strikes: dict[str, list[UpdateRejected]] = field(default_factory=dict)
    """The job's peers' refusals that count against them (``update.rejected`` with
    ``strike``), by peer."""
    excluded: dict[str, PeerExcluded] = field(default_factory=dict)
    terminal: Literal["completed", "failed", "cancelled"] | None = None
    error: str | None = None
    error_code: str | None = None
    finished_at: datetime | None = None
    tasks_assigned: int = 0

    # -- reading -----------------------------------------------------------------------

    @property
    def state(self) -> JobState:
        """Where the job is."""
        if self.terminal is not None:
            return self.terminal
        return "running" if self.configured is not None else "sharding"

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
            return int(self.created.training.get("rounds", 10))
        return 0

    @property
    def local_epochs(self) -> int:
        """Epochs each task trains (``training.local_epochs``)."""
        training = self.configured.training if self.configured else {}
        return parse_training_params(training).local_epochs

    def task(self, task_id: str) -> Task | None:
        """A task of the current round attempt."""
        return self.current.tasks.get(task_id) if self.current else None

    def find_task(self, task_id: str) -> Task | None:
        """A task of any round."""
        for rnd in self.rounds.values():
            if task_id in rnd.tasks:
                return rnd.tasks[task_id]
        return None

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
            self._apply_model(event.data)
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
                )
        elif isinstance(data, TaskAccepted):
            task = self.find_task(data.task_id)
            if task is not None and task.state == "assigned":
                task.state = "accepted"
                task.device = data.device
        elif isinstance(data, TaskProgress):
            self.progress.append(data)
            task = self.find_task(data.task_id)
            if task is not None:
                task.epoch = max(task.epoch, data.epoch)
        elif isinstance(data, TaskFailed):
            task = self.find_task(data.task_id)
            if task is not None and task.open:
                task.state = "failed"
                task.error = data.error
                task.traceback = data.traceback
        elif isinstance(data, TaskLost):
            task = self.find_task(data.task_id)
            if task is not None and (task.open or _withdrawn(self, task)):
                if task.state == "updated":  # an excluded peer's update leaves its round
                    rnd = self.rounds[(task.round, task.attempt)]
                    if (inc := rnd.accepted.get(task.shard)) and inc.task_id == task.task_id:
                        del rnd.accepted[task.shard]
                task.state = "lost"
                task.error = f"lost: {data.reason}"
        elif isinstance(data, RoundClosed | RoundFailed):
            rnd = self.rounds.get((data.round, data.attempt))
            if rnd is not None:
                rnd.state = "closed" if isinstance(data, RoundClosed) else "failed"
                rnd.closed_at = at
                rnd.close_reason = data.reason if isinstance(data, RoundClosed) else "too_few"
        elif isinstance(data, PeerExcluded):
            self.excluded.setdefault(data.peer_id, data)
        elif isinstance(data, JobCompleted):
            self._end("completed", at)
        elif isinstance(data, JobFailed):
            self._end("failed", at)
            self.error, self.error_code = data.reason, data.code
        elif isinstance(data, JobCancelled):
            self._end("cancelled", at)
            self.error = f"cancelled by {data.by}"

    def _end(self, state: Literal["completed", "failed", "cancelled"], at: datetime) -> None:
        self.terminal = state
        self.finished_at = at

    def _apply_model(self, data: object) -> None:
        if isinstance(data, UpdateAccepted):
            rnd = self.rounds.get((data.round, data.attempt))
            if rnd is None:
                return
            task = rnd.tasks.get(data.task_id)
            if task is not None and task.peer_id != data.peer_id:
                return  # the aggregator accepts only the task's peer; never fold otherwise
            if task is not None and task.state != "lost":
                task.state = "updated"
            if rnd.state == "open" and data.shard not in rnd.accepted:
                rnd.accepted[data.shard] = IncludedUpdate(
                    shard=data.shard,
                    peer_id=data.peer_id,
                    task_id=data.task_id,
                    key=data.key,
                    sha256=data.sha256,
                )
        elif isinstance(data, UpdateRejected):
            self.rejected.append(data)
            if data.strike and self.created is not None and data.peer_id in self.created.peers:
                self.strikes.setdefault(data.peer_id, []).append(data)
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
        elif isinstance(data, ModelExported):
            self.exported = data


# -- deciding --------------------------------------------------------------------------


@dataclass(frozen=True)
class Env:
    """What a decision may depend on besides the job: the time and the peers online."""

    now: datetime
    online: frozenset[str]
    max_attempts: int = 3


def reconcile(job: Job, env: Env) -> list[EventData]:
    """The job events to append next (a batch; call again after applying it)."""
    if job.terminal is not None or job.created is None:
        return []
    if job.sharding_failed is not None and job.configured is None:
        failed = job.sharding_failed
        return [JobFailed(job_id=job.job_id, code=failed.code, reason=failed.message)]
    if job.configured is None:
        return []
    excluding = _exclusions(job)
    if excluding:
        return excluding
    if job.excluded:  # an excluded peer is given nothing more, as if it were offline
        env = replace(env, online=env.online - job.excluded.keys())
    cur = job.current
    if cur is not None and cur.state == "open":
        return _tend_round(job, cur, env)
    if cur is not None and cur.state == "failed":
        return []  # a failed attempt is followed by its retry (or the job failed) at once
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
        return []  # waiting for the aggregator
    return _open(job, next_round, 1, version, env)


def _withdrawn(job: Job, task: Task) -> bool:
    """An accepted update of an excluded peer in a round still open: to be taken out."""
    if task.state != "updated" or task.peer_id not in job.excluded:
        return False
    rnd = job.rounds.get((task.round, task.attempt))
    return rnd is not None and rnd.state == "open"


def _exclusions(job: Job) -> list[EventData]:
    """``peer.excluded`` for each peer with enough strikes that is not excluded yet."""
    assert job.configured is not None
    limit = parse_aggregation_spec(job.configured.aggregation).exclude_after
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


def _deadline(job: Job, env: Env) -> datetime:
    assert job.configured is not None
    agg = parse_aggregation_spec(job.configured.aggregation)
    return env.now + timedelta(seconds=agg.round_deadline_s)


def _open(
    job: Job, round_: int, attempt: int, version: ModelVersionCreated, env: Env
) -> list[EventData]:
    assert job.configured is not None
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
    for plan in job.configured.shards:
        peer = plan.peer_id
        if peer not in env.online:
            spare = _spare(job, load, env, exclude=peer)
            peer = spare or peer
        load[peer] = load.get(peer, 0) + 1
        n += 1
        events.append(_assign(job, round_, attempt, plan.index, peer, n, deadline, None))
    return events


def _assign(
    job: Job,
    round_: int,
    attempt: int,
    shard: int,
    peer: str,
    n: int,
    deadline: datetime,
    replaces: str | None,
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
    )


def _spare(job: Job, load: dict[str, int], env: Env, *, exclude: str) -> str | None:
    """The job's online peer with the least work this round (shard order breaks ties)."""
    assert job.created is not None
    candidates = [p for p in dict.fromkeys(job.created.peers) if p in env.online and p != exclude]
    if not candidates:
        return None
    return min(candidates, key=lambda p: (load.get(p, 0), job.created.peers.index(p)))  # type: ignore[union-attr]


def _tend_round(job: Job, cur: Round, env: Env) -> list[EventData]:
    assert job.configured is not None
    events: list[EventData] = []
    # 1. tasks whose peer went offline: lost, and given to a spare peer if there is one
    load = {p: cur.open_load(p) for p in {t.peer_id for t in cur.tasks.values()}}
    n = job.tasks_assigned
    #    (an excluded peer's update in the open round is withdrawn the same way: what a
    #    peer caught cheating sent is not aggregated, and its shard is trained again)
    for task in list(cur.tasks.values()):
        if not (task.open or _withdrawn(job, task)) or task.peer_id in env.online:
            continue
        if env.now >= cur.deadline:
            continue
        events.append(
            _lost(job, task, "excluded" if task.peer_id in job.excluded else "peer_offline")
        )
        load[task.peer_id] = load.get(task.peer_id, 1) - 1
        spare = _spare(job, load, env, exclude=task.peer_id)
        if spare is not None:
            load[spare] = load.get(spare, 0) + 1
            n += 1
            events.append(
                _assign(
                    job, cur.round, cur.attempt, task.shard, spare, n, cur.deadline, task.task_id
                )
            )
    # 2. a shard whose update was rejected (or whose training failed) is trained once more
    #    by another online peer: a hostile or broken peer cannot take its data out of the
    #    round. The seed is the shard's, so an honest retry gives the honest update.
    for task in list(cur.tasks.values()):
        if task.state not in ("rejected", "failed") or task.replaced or env.now >= cur.deadline:
            continue
        if task.reassigned_from is not None or not cur.shard_resolved(task.shard):
            continue  # one retry per shard and round; or another task is still on it
        if task.shard in cur.accepted:
            continue
        spare = _spare(job, load, env, exclude=task.peer_id)
        if spare is not None:
            load[spare] = load.get(spare, 0) + 1
            n += 1
            events.append(
                _assign(
                    job, cur.round, cur.attempt, task.shard, spare, n, cur.deadline, task.task_id
                )
            )
    if events:
        return events
    # 3. close when every shard is resolved, or at the deadline
    shards = [plan.index for plan in job.configured.shards]
    everything = all(cur.shard_resolved(s) for s in shards)
    if not everything and env.now < cur.deadline:
        return []
    if not everything:
        events += [_lost(job, t, "deadline") for t in cur.tasks.values() if t.open]
    agg = parse_aggregation_spec(job.configured.aggregation)
    accepted = len(cur.accepted)
    if accepted >= agg.min_peers:
        reason: Literal["complete", "deadline", "resolved"] = (
            "complete" if accepted == len(shards) else "resolved" if everything else "deadline"
        )
        included = tuple(cur.accepted[s] for s in sorted(cur.accepted))
        events.append(
            RoundClosed(
                job_id=job.job_id,
                round=cur.round,
                attempt=cur.attempt,
                reason=reason,
                included=included,
            )
        )
        return events
    retry = cur.attempt < env.max_attempts
    events.append(
        RoundFailed(
            job_id=job.job_id,
            round=cur.round,
            attempt=cur.attempt,
            accepted=accepted,
            min_peers=agg.min_peers,
            retry=retry,
        )
    )
    if not retry:
        events.append(
            JobFailed(
                job_id=job.job_id,
                code="too_few_updates",
                reason=(
                    f"round {cur.round} got {accepted} accepted update(s) in each of "
                    f"{cur.attempt} attempts, fewer than min_peers={agg.min_peers}"
                ),
            )
        )
        return events
    version = job.versions.get(cur.model_version)
    if version is None:  # pragma: no cover - a round is only opened on a known version
        return events
    # the next attempt's tasks are numbered after this batch's (lost ones included)
    job_after = Job(job.job_id, tasks_assigned=job.tasks_assigned, configured=job.configured)
    job_after.created = job.created
    events += _open(job_after, cur.round, cur.attempt + 1, version, env)
    return events


def _lost(
    job: Job, task: Task, reason: Literal["peer_offline", "deadline", "excluded"]
) -> TaskLost:
    return TaskLost(
        job_id=job.job_id,
        task_id=task.task_id,
        round=task.round,
        shard=task.shard,
        peer_id=task.peer_id,
        reason=reason,
    )
