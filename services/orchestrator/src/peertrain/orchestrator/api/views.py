"""The jobs API's answers (HTTP response bodies); the request body is the domain's
:class:`~peertrain.orchestrator.domain.job_request.JobRequest`."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from peertrain.common.events import RecordedEvent
from peertrain.common.events.models import UpdateRejected
from peertrain.common.events.training import JobCreated, ModelSource, ShardingSpec
from peertrain.common.events.weights import WeightsSource
from peertrain.common.specs import (
    AggregationSpec,
    ModelSpec,
    TrainingParams,
)

from ..domain import Job, Round, Task, buffered, stragglers
from ..domain.job import JobState, TaskStateName

__all__ = [
    "EventPublic",
    "InitialMetrics",
    "JobAccepted",
    "JobCancelling",
    "JobChecked",
    "JobDetail",
    "JobMetrics",
    "JobSummary",
    "LatestMetrics",
    "PeerEpochMetrics",
    "RoundMetrics",
    "RoundPublic",
    "TaskPublic",
]


class JobAccepted(BaseModel):
    """``POST /api/jobs``: the new job's id (sharding follows)."""

    job_id: str


class JobChecked(BaseModel):
    """``POST /api/jobs?dry_run=true``: the request passed every check; this is the job
    it would create (peers in shard order, defaults filled in). Nothing was created."""

    dry_run: Literal[True] = True
    name: str
    dataset_id: str
    peers: list[str] = Field(description="In shard order: shard k is peers[k]'s")
    model: ModelSpec
    training: TrainingParams
    aggregation: AggregationSpec
    sharding: ShardingSpec
    init_from: ModelSource | None
    init_weights: WeightsSource | None = None

    @classmethod
    def of(cls, created: JobCreated) -> JobChecked:
        """From the ``job.created`` the request would have appended."""
        return cls(
            name=created.name,
            dataset_id=created.dataset_id,
            peers=list(created.peers),
            model=created.model,
            training=created.training,
            aggregation=created.aggregation,
            sharding=created.sharding,
            init_from=created.init_from,
            init_weights=created.init_weights,
        )


class JobCancelling(BaseModel):
    """``POST /api/jobs/{id}/cancel``: the job and its state after the request."""

    job_id: str
    state: JobState


class LatestMetrics(BaseModel):
    """The holdout metrics of the job's newest evaluated model version."""

    round: int
    version: int
    loss: float
    accuracy: float

    @classmethod
    def of(cls, job: Job) -> LatestMetrics | None:
        """``None`` before any version was evaluated."""
        if not job.evaluations:
            return None
        version = max(job.evaluations)
        ev = job.evaluations[version]
        return cls(round=version, version=version, loss=ev.loss, accuracy=ev.accuracy)


class _JobLine(BaseModel):
    job_id: str
    name: str
    state: JobState
    dataset_id: str
    rounds: int
    current_round: int | None
    created_at: datetime | None
    finished_at: datetime | None
    accuracy: float | None = Field(description="The latest holdout accuracy")
    loss: float | None = Field(description="The latest holdout loss")

    @staticmethod
    def _line(job: Job) -> dict[str, Any]:
        assert job.created is not None
        latest = LatestMetrics.of(job)
        return {
            "job_id": job.job_id,
            "name": job.created.name,
            "state": job.state,
            "dataset_id": job.created.dataset_id,
            "rounds": job.rounds_total,
            "current_round": job.current.round if job.current is not None else None,
            "created_at": job.created_at,
            "finished_at": job.finished_at,
            "accuracy": latest.accuracy if latest else None,
            "loss": latest.loss if latest else None,
        }


class JobSummary(_JobLine):
    """One line of ``GET /api/jobs``."""

    peers: int = Field(description="How many peers the job runs on")

    @classmethod
    def of(cls, job: Job) -> JobSummary:
        """From the job's folded state."""
        assert job.created is not None
        return cls(**cls._line(job), peers=len(job.created.peers))


class TaskPublic(BaseModel):
    """One task: a shard's training in one round, by one peer."""

    model_config = ConfigDict(from_attributes=True)

    task_id: str
    round: int
    attempt: int
    shard: int
    peer_id: str
    state: TaskStateName
    device: str | None
    assigned_at: datetime
    deadline: datetime
    reassigned_from: str | None
    checks: str | None = Field(
        default=None,
        description="The task this one checks (aggregation.verify): trained again, compared",
    )
    error: str | None
    traceback: str | None

    @classmethod
    def of(cls, task: Task) -> TaskPublic:
        """From a task of the job's state (its fields of the same names)."""
        return cls.model_validate(task)


class RoundPublic(BaseModel):
    """One attempt at one round."""

    round: int
    attempt: int
    state: Literal["open", "closed", "failed"]
    model_version: int
    opened_at: datetime
    deadline: datetime
    closed_at: datetime | None
    close_reason: str | None
    accepted: list[int] = Field(
        description=(
            "Shards whose update the round accepted; in an asynchronous job, the shards "
            "of the updates its buffer holds (closed: that its version aggregates)"
        )
    )
    shards: int = Field(
        description=(
            "Tasks the round gave out, one per shard (peers_per_round or every shard, "
            "plus aggregation.over_select), before any reassignment"
        ),
    )
    closes_on: int = Field(
        description=(
            "Accepted updates the round closes on: every task it gave out, or fewer "
            "with aggregation.over_select; in an asynchronous job, buffer_size"
        ),
    )
    surplus: list[int] = Field(
        description=(
            "Shards whose task was ended when the round closed on enough updates "
            "(task.lost surplus: no strike, the peer is told to stop)"
        ),
    )

    @classmethod
    def of(cls, rnd: Round, job: Job) -> RoundPublic:
        """From a round of the job's state."""
        shards = len({t.shard for t in rnd.tasks.values()})
        closes_on = stragglers.closes_on(job) if job.configured is not None else shards
        accepted = sorted(rnd.accepted)
        if job.is_async:  # a buffer of K updates, from any round (a shard may come twice)
            closes_on = buffered.buffer_size(job)
            accepted = (
                sorted(u.shard for u in rnd.included)
                if rnd.state == "closed"
                else sorted(u.shard for u in buffered.admissible(job, rnd.model_version))
            )
        return cls(
            shards=shards,
            closes_on=closes_on,
            surplus=stragglers.surplus_shards(rnd),
            round=rnd.round,
            attempt=rnd.attempt,
            state=rnd.state,
            model_version=rnd.model_version,
            opened_at=rnd.opened_at,
            deadline=rnd.deadline,
            closed_at=rnd.closed_at,
            close_reason=rnd.close_reason,
            accepted=accepted,
        )


class WaitingPublic(BaseModel):
    """A round attempt that waits for the job's peers to come online."""

    round: int
    attempt: int
    online: int = Field(description="The job's peers online when the wait began")
    needed: int = Field(description="Peers online it opens with")
    since: datetime
    until: datetime = Field(description="When the job fails if they are not (peer_wait_s)")

    @classmethod
    def of(cls, job: Job) -> WaitingPublic | None:
        """``None`` unless the job waits for peers."""
        w = job.waiting
        if w is None or job.terminal is not None:
            return None
        return cls(
            round=w.round,
            attempt=w.attempt,
            online=w.online,
            needed=w.needed,
            since=w.since,
            until=w.until,
        )


class JobDetail(_JobLine):
    """``GET /api/jobs/{id}``: state, current round, peers and tasks, latest metrics."""

    owner_id: str
    peers: list[str] = Field(description="In shard order: shard k is peers[k]'s")
    model: ModelSpec
    training: TrainingParams
    aggregation: AggregationSpec
    sharding: ShardingSpec
    config_key: str | None
    round: RoundPublic | None = Field(description="The current round attempt")
    waiting: WaitingPublic | None = Field(
        default=None, description="The next round attempt, waiting for peers to come online"
    )
    tasks: list[TaskPublic] = Field(
        description="Every task of the current round, and failed or rejected ones of earlier"
    )
    latest: LatestMetrics | None
    final_version: int | None
    error: str | None
    error_code: str | None
    rejected_updates: list[UpdateRejected]
    init_from: ModelSource | None = Field(description="The model version it started from")
    init_weights: WeightsSource | None = Field(
        default=None, description="The uploaded weights it started from"
    )

    @classmethod
    def of(cls, job: Job) -> JobDetail:
        """From the job's folded state (specs parsed: a dict or an already typed spec)."""
        created = job.created
        assert created is not None
        tasks = [
            TaskPublic.of(t)
            for rnd in job.rounds.values()
            for t in rnd.tasks.values()
            if rnd is job.current or t.state in ("failed", "rejected")
        ]
        return cls(
            **cls._line(job),
            owner_id=created.owner_id,
            peers=list(created.peers),
            model=created.model,
            training=created.training,
            aggregation=created.aggregation,
            sharding=created.sharding,
            config_key=job.configured.config_key if job.configured else None,
            round=RoundPublic.of(job.current, job) if job.current else None,
            waiting=WaitingPublic.of(job),
            tasks=tasks,
            latest=LatestMetrics.of(job),
            final_version=job.exported.version if job.exported else None,
            error=job.error,
            error_code=job.error_code,
            rejected_updates=list(job.rejected),
            init_from=created.init_from,
            init_weights=created.init_weights,
        )


class InitialMetrics(BaseModel):
    """The initial model's (version 0) holdout metrics."""

    version: Literal[0] = 0
    loss: float
    accuracy: float


class RoundMetrics(BaseModel):
    """One model version's holdout metrics, and how its round went."""

    round: int
    version: int
    loss: float
    accuracy: float
    per_class_accuracy: list[float | None]
    samples: int
    duration_s: float | None
    peers: int | None = Field(
        description=(
            "Updates the round's version aggregates (its accepted ones less the norm "
            "outliers and unconfirmed checked work it left out)"
        )
    )
    bytes_up: int | None = Field(
        default=None, description="Bytes of the updates the round accepted, as uploaded"
    )
    bytes_up_dense: int | None = Field(
        default=None,
        description="What those updates' tensors weigh in float32 (absent for old events)",
    )
    bytes_down_per_peer: int | None = Field(
        default=None, description="Bytes of the model version each peer of the round fetched"
    )


class PeerEpochMetrics(BaseModel):
    """What a peer reported after one local epoch of one task."""

    model_config = ConfigDict(from_attributes=True)

    peer_id: str
    round: int
    shard: int
    task_id: str
    epoch: int
    epochs: int
    loss: float | None
    accuracy: float | None
    samples: int
    duration_s: float


class JobMetrics(BaseModel):
    """``GET /api/jobs/{id}/metrics``: per round (holdout), per peer per epoch (training)."""

    job_id: str
    compression: str = Field(
        default="none", description="How the job's updates travel (training.compression.kind)"
    )
    initial: InitialMetrics | None
    rounds: list[RoundMetrics]
    peers: list[PeerEpochMetrics]

    @classmethod
    def of(cls, job: Job) -> JobMetrics:
        """From the job's folded state."""
        closed = {rnd.round: rnd for rnd in job.rounds.values() if rnd.state == "closed"}
        rounds = []
        for version in sorted(v for v in job.evaluations if v > 0):
            ev = job.evaluations[version]
            rnd = closed.get(version)
            rounds.append(
                RoundMetrics(
                    round=version,
                    version=version,
                    loss=ev.loss,
                    accuracy=ev.accuracy,
                    per_class_accuracy=list(ev.per_class_accuracy),
                    samples=ev.samples,
                    duration_s=(
                        (rnd.closed_at - rnd.opened_at).total_seconds()
                        if rnd is not None and rnd.closed_at is not None
                        else None
                    ),
                    peers=_aggregated(rnd),
                    **_round_bytes(job, rnd),
                )
            )
        peers = [PeerEpochMetrics.model_validate(p) for p in job.progress]
        initial = job.evaluations.get(0)
        configured = job.configured
        return cls(
            job_id=job.job_id,
            compression=configured.training.compression.kind if configured else "none",
            initial=InitialMetrics(loss=initial.loss, accuracy=initial.accuracy)
            if initial
            else None,
            rounds=rounds,
            peers=peers,
        )


def _aggregated(rnd: Round | None) -> int | None:
    """The updates a closed round's version aggregates (``round.closed`` ``included``):
    its accepted ones less those it left out (norm outliers, unconfirmed checked work);
    in an asynchronous job, its buffer."""
    if rnd is None:
        return None
    return len(rnd.included)


def _round_bytes(job: Job, rnd: Round | None) -> dict[str, int | None]:
    """Bytes a closed round moved: its accepted updates up (as sent, and in float32),
    and its base version down to each peer."""
    if rnd is None:
        return {}
    dense = [d for _, d in rnd.sizes.values()]
    base = job.versions.get(rnd.model_version)
    return {
        "bytes_up": sum(s for s, _ in rnd.sizes.values()),
        "bytes_up_dense": None if None in dense else sum(d for d in dense if d is not None),
        "bytes_down_per_peer": base.size if base is not None else None,
    }


class EventPublic(BaseModel):
    """One event of a job's lineage (``GET /api/jobs/{id}/events``)."""

    id: str
    type: str
    occurred_at: datetime
    stream: str
    seq: int
    position: int
    producer: str
    actor: str | None
    data: dict[str, Any] = Field(description="The event's payload (its type's schema)")

    @classmethod
    def of(cls, event: RecordedEvent) -> EventPublic:
        """From a recorded event."""
        return cls(
            id=event.id,
            type=event.type,
            occurred_at=event.occurred_at,
            stream=event.stream,
            seq=event.seq,
            position=event.position,
            producer=event.producer,
            actor=event.actor,
            data=event.payload_dict(),
        )
