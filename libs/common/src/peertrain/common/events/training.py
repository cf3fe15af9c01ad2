"""Training events, appended by the orchestrator on the stream ``job:<id>``.

Lifecycle of one job::

    job.created -> (dataset.sharded) -> job.configured
      -> [round.waiting(r)] -> round.opened(r) -> task.assigned ... -> task.accepted /
         task.progress / task.failed / task.lost -> round.closed(r) | round.failed(r)
      -> ... -> job.completed | job.failed | job.cancelled

A round (or a retry) opens only with enough of the job's peers online; until then it
waits (``round.waiting``, at most ``aggregation.peer_wait_s``), and a failed attempt's
retry opens after a backoff (``round.failed`` ``retry_at``).

``job.created`` is the contract the dataset service shards from: it carries the whole
job specification, validated by the orchestrator, as the typed specs of
:mod:`peertrain.common.specs` (every default filled in, so no reader has its own).
``job.configured`` is the contract the aggregator builds the model from: the spec plus
what sharding produced (shard sizes, holdout, feature spec) and the ``config.json`` key.

A task is one shard's training in one round (``task_id`` = ``<job>.<round>.<attempt>.
<shard>.<n>``); a shard whose peer went offline is assigned again to another peer of
the job (a new ``task_id``). The aggregator accepts one update per shard per round.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from peertrain.common.specs import AggregationSpec, MLPSpec, ModelSpec, TrainingParams
from peertrain.common.specs.sharding import ShardingSpec

from .catalogue import event_type
from .datasets import ArtifactRef, FeatureSpec
from .envelope import EventData
from .tasks import EpochReport
from .weights import WeightsSource

__all__ = [
    "JOB_CANCELLED",
    "JOB_COMPLETED",
    "JOB_CONFIGURED",
    "JOB_CREATED",
    "JOB_EVENT_TYPES",
    "JOB_FAILED",
    "JOB_TERMINAL_TYPES",
    "PEER_EXCLUDED",
    "ROUND_CLOSED",
    "ROUND_FAILED",
    "ROUND_OPENED",
    "ROUND_WAITING",
    "TASK_ACCEPTED",
    "TASK_ASSIGNED",
    "TASK_FAILED",
    "TASK_LOST",
    "TASK_PROGRESS",
    "DroppedUpdate",
    "IncludedUpdate",
    "JobCancelled",
    "JobCompleted",
    "JobConfigured",
    "JobCreated",
    "JobFailed",
    "ModelSource",
    "PeerExcluded",
    "RoundClosed",
    "RoundFailed",
    "RoundOpened",
    "RoundWaiting",
    "ShardPlan",
    "ShardingSpec",
    "TaskAccepted",
    "TaskAssigned",
    "TaskFailed",
    "TaskLost",
    "TaskProgress",
    "job_stream",
    "update_key",
]

JOB_CREATED = "job.created"
JOB_CONFIGURED = "job.configured"
ROUND_OPENED = "round.opened"
ROUND_WAITING = "round.waiting"
TASK_ASSIGNED = "task.assigned"
TASK_ACCEPTED = "task.accepted"
TASK_PROGRESS = "task.progress"
TASK_FAILED = "task.failed"
TASK_LOST = "task.lost"
ROUND_CLOSED = "round.closed"
ROUND_FAILED = "round.failed"
JOB_COMPLETED = "job.completed"
JOB_FAILED = "job.failed"
JOB_CANCELLED = "job.cancelled"
PEER_EXCLUDED = "peer.excluded"

JOB_TERMINAL_TYPES: tuple[str, ...] = (JOB_COMPLETED, JOB_FAILED, JOB_CANCELLED)
JOB_EVENT_TYPES: tuple[str, ...] = (
    JOB_CREATED,
    JOB_CONFIGURED,
    ROUND_WAITING,
    ROUND_OPENED,
    TASK_ASSIGNED,
    TASK_ACCEPTED,
    TASK_PROGRESS,
    TASK_FAILED,
    TASK_LOST,
    ROUND_CLOSED,
    ROUND_FAILED,
    PEER_EXCLUDED,
    *JOB_TERMINAL_TYPES,
)
"""Every event type of the ``job:<id>`` streams."""


def job_stream(job_id: str) -> str:
    """The stream of one job's events, ``job:<id>``."""
    return f"job:{job_id}"


def update_key(job_id: str, round_: int, attempt: int, shard: int, peer_id: str) -> str:
    """Where a task's update goes: one key per job, round, attempt, shard and peer."""
    return f"jobs/{job_id}/rounds/{round_}/updates/a{attempt}-s{shard}-{peer_id}.safetensors"


class ShardPlan(BaseModel):
    """One shard of a job as sharding wrote it (``peers[index]`` trains it first)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int = Field(ge=0)
    peer_id: str
    key: str
    sha256: str
    size: int = Field(ge=0)
    rows: int = Field(ge=1)


class ModelSource(BaseModel):
    """Another job's model version a job starts from (its version 0 is a copy)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str
    version: int = Field(ge=0)
    key: str
    sha256: str


def _default_model() -> MLPSpec:
    return MLPSpec(arch="mlp")


@event_type(JOB_CREATED)
class JobCreated(EventData):
    """A user created a training job over a validated dataset and chosen peers.

    ``peers`` are in shard order: shard ``k`` goes to ``peers[k]``.
    """

    job_id: str
    owner_id: str
    name: str
    dataset_id: str
    peers: tuple[str, ...] = Field(min_length=1)
    sharding: ShardingSpec = ShardingSpec()
    model: ModelSpec = Field(default_factory=_default_model)
    training: TrainingParams = TrainingParams()
    aggregation: AggregationSpec = AggregationSpec()
    init_from: ModelSource | None = None
    """Start from this model version instead of fresh weights (same model, same data shape)."""
    init_weights: WeightsSource | None = None
    """Start from these uploaded weights (checked against the model when created)."""

    @field_validator("model", mode="before")
    @classmethod
    def _empty_model_is_default(cls, value: Any) -> Any:
        # Before the specs were typed, ``model`` defaulted to ``{}`` (events written by
        # tests, never by the orchestrator); they still read, as the default model.
        return _default_model() if value == {} else value


@event_type(JOB_CONFIGURED)
class JobConfigured(EventData):
    """The job's data is sharded and its ``config.json`` written: rounds can start.

    ``reference_weight`` is the sum of the shards' rows: the weight a full round
    carries (it sizes the aggregator's exact accumulator, the same on every replay).
    """

    job_id: str
    config_key: str
    config_sha256: str
    rounds: int = Field(ge=1)
    model: ModelSpec
    training: TrainingParams
    aggregation: AggregationSpec
    feature_spec: FeatureSpec
    shards: tuple[ShardPlan, ...] = Field(min_length=1)
    holdout: ArtifactRef
    reference_weight: float = Field(gt=0)
    init_from: ModelSource | None = None
    """Version 0 is a copy of this version of another job's model (else fresh weights)."""
    init_weights: WeightsSource | None = None
    """Version 0 is these uploaded weights, bit for bit."""
    check_key: int | None = Field(default=None, ge=0, lt=2**63)
    """The secret that picks which tasks are checked (``aggregation.verify``'s share),
    drawn when the job is configured and never sent to peers: every task message carries
    the job's seed, so a hash of the seed alone would tell a peer which of its tasks are
    checked. ``None`` in logs written before it: the job's seed then."""


@event_type(ROUND_OPENED)
class RoundOpened(EventData):
    """Round ``round`` (from 1) trains model version ``round - 1`` until ``deadline``.

    ``attempt`` counts openings of the same round (a round that closed below
    ``min_peers`` is opened again).
    """

    job_id: str
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    model_version: int = Field(ge=0)
    model_key: str
    model_sha256: str
    deadline: datetime


@event_type(ROUND_WAITING)
class RoundWaiting(EventData):
    """Attempt ``attempt`` of round ``round`` cannot open yet: fewer of the job's peers
    are online (and not excluded) than it needs. It opens as soon as ``needed`` are
    online; at ``until`` (``aggregation.peer_wait_s`` after ``since``) the job fails
    (``too_few_peers_online``). Appended once per attempt."""

    job_id: str
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    online: int = Field(ge=0)
    """The job's peers online (and not excluded) when the wait began."""
    needed: int = Field(ge=1)
    since: datetime
    until: datetime


@event_type(TASK_ASSIGNED)
class TaskAssigned(EventData):
    """Shard ``shard`` of round ``round`` goes to ``peer_id`` (sent on ``peer.<id>.task``).

    ``reassigned_from`` names the task this one replaces (its peer went offline).
    ``checks`` names the task this one checks (``aggregation.verify``): the same shard,
    model version and seed, trained by another peer, its update compared with that
    task's. Its peer's message is like any other's: nobody can tell from a task that it
    is checked, or a check.
    """

    job_id: str
    task_id: str
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    shard: int = Field(ge=0)
    peer_id: str
    update_key: str
    deadline: datetime
    reassigned_from: str | None = None
    checks: str | None = None


@event_type(TASK_ACCEPTED)
class TaskAccepted(EventData):
    """The peer took the task (it acknowledged the message and started)."""

    job_id: str
    task_id: str
    round: int = Field(ge=1)
    shard: int = Field(ge=0)
    peer_id: str
    device: str | None = None


@event_type(TASK_PROGRESS)
class TaskProgress(EventData):
    """Local epochs done (as the peer reports them: informative, never trusted):
    ``epoch`` and its figures, and the ``earlier`` epochs of the same report (a peer
    reports at most about once a second; events before them hold one epoch each)."""

    job_id: str
    task_id: str
    round: int = Field(ge=1)
    shard: int = Field(ge=0)
    peer_id: str
    epoch: int = Field(ge=1)
    epochs: int = Field(ge=1)
    loss: float | None
    """``None`` when not finite (the peer's training diverged)."""
    accuracy: float | None
    samples: int = Field(ge=0)
    duration_s: float = Field(ge=0)
    earlier: tuple[EpochReport, ...] = ()

    def by_epoch(self) -> list[TaskProgress]:
        """One event per epoch it records, in order, none with ``earlier``."""
        each = [self.model_copy(update={**e.model_dump(), "earlier": ()}) for e in self.earlier]
        return [*each, self.model_copy(update={"earlier": ()})]


@event_type(TASK_FAILED)
class TaskFailed(EventData):
    """The peer's training raised: its error and traceback, shown in the job's details."""

    job_id: str
    task_id: str
    round: int = Field(ge=1)
    shard: int = Field(ge=0)
    peer_id: str
    error: str
    traceback: str = ""


@event_type(TASK_LOST)
class TaskLost(EventData):
    """The task's peer went offline (or the job ended) before its update came.

    ``surplus``: its round closed on the updates it needed (``aggregation.over_select``)
    before this one came; its peer is told to stop, and no strike counts against it."""

    job_id: str
    task_id: str
    round: int = Field(ge=1)
    shard: int = Field(ge=0)
    peer_id: str
    reason: Literal["peer_offline", "deadline", "cancelled", "superseded", "excluded", "surplus"]


class IncludedUpdate(BaseModel):
    """An accepted update a closed round aggregates: its shard, sender and object."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    shard: int = Field(ge=0)
    peer_id: str
    task_id: str
    key: str
    sha256: str
    base_version: int | None = Field(default=None, ge=0)
    """Asynchronous rounds: the model version its task trained from (the round builds
    on the newest, so it is ``round - 1 - base_version`` versions stale); ``None``
    (synchronous rounds, old logs): the round's own base."""


class DroppedUpdate(BaseModel):
    """An accepted update a closed round leaves out: its norm is over ``bound``,
    ``aggregation.norm_outlier`` times the median norm of the round's accepted updates.
    It counts against its peer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    shard: int = Field(ge=0)
    peer_id: str
    task_id: str
    norm: float = Field(ge=0)
    bound: float = Field(ge=0)


@event_type(ROUND_CLOSED)
class RoundClosed(EventData):
    """Round ``round`` is over: aggregate exactly ``included`` into model version ``round``.

    ``reason``: ``complete`` (every shard answered) or ``deadline``; ``buffered``: an
    asynchronous round's buffer is full (``included``, in the order the updates were
    accepted). ``dropped``: the round's accepted updates left out as norm outliers
    (each a strike for its peer). ``unconfirmed``: a synchronous round's accepted updates
    of checked tasks (``aggregation.verify``) left out because their check group did not
    confirm them (no two agreed, the check was lost, or the deadline came first); no
    strike.
    """

    job_id: str
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    reason: Literal["complete", "deadline", "resolved", "buffered"]
    included: tuple[IncludedUpdate, ...] = Field(min_length=1)
    dropped: tuple[DroppedUpdate, ...] = ()
    unconfirmed: tuple[IncludedUpdate, ...] = ()


@event_type(ROUND_FAILED)
class RoundFailed(EventData):
    """The round ended with fewer accepted updates than ``min_peers``.

    ``retry``: the round is opened again (not before ``retry_at``, when set); otherwise
    the job fails. ``counted``: the attempt counts against the round's attempts because
    peers failed it (an update refused, a training failed, a deadline missed); an
    attempt whose peers only went offline does not (the platform may have lost them).
    """

    job_id: str
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    accepted: int = Field(ge=0)
    min_peers: int = Field(ge=1)
    retry: bool
    counted: bool = True
    retry_at: datetime | None = None


@event_type(JOB_COMPLETED)
class JobCompleted(EventData):
    """Every round is aggregated and the final model is exported."""

    job_id: str
    final_version: int = Field(ge=1)
    accuracy: float | None = None
    loss: float | None = None


@event_type(JOB_FAILED)
class JobFailed(EventData):
    """The job stopped for good; ``code`` is machine-readable, ``reason`` one sentence."""

    job_id: str
    code: str
    reason: str


@event_type(JOB_CANCELLED)
class JobCancelled(EventData):
    """The owner (or an admin) cancelled the job; peers were told to stop."""

    job_id: str
    by: str


@event_type(PEER_EXCLUDED)
class PeerExcluded(EventData):
    """A peer whose updates kept being refused takes no further part in the job: its
    open tasks are lost and its shards go to the job's other peers."""

    job_id: str
    peer_id: str
    strikes: int = Field(ge=1)
    """Refusals counted against it (invalid updates, or announcements not its to make)."""
    reason: str
