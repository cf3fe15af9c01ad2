"""Model events, appended by the aggregator on the stream ``model:<job_id>``.

::

    model.version_created(v0)            (from job.configured: the seeded initial model)
    update.accepted / update.rejected    (one per announced update, duplicates ignored)
    update.checked                       (two updates of one checked task compared)
    model.version_created(v<r>)          (from round.closed r) -> model.evaluated(v<r>)
                                         | model.diverged(v<r>) (non-finite: the job fails)
    model.exported                       (after the last round: final.pt, final.safetensors)

Version ``v`` lives at ``models/<job>/v<v>.safetensors``; a stateful strategy's server
state (FedAdam's moments) after version ``v`` at ``models/<job>/v<v>.server.safetensors``.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from .catalogue import event_type
from .envelope import EventData

__all__ = [
    "CHECK_MISMATCH",
    "MODEL_DIVERGED",
    "MODEL_EVALUATED",
    "MODEL_EVENT_TYPES",
    "MODEL_EXPORTED",
    "MODEL_VERSION_CREATED",
    "NORM_OUTLIER",
    "NUMERIC_REFUSALS",
    "UPDATE_ACCEPTED",
    "UPDATE_CHECKED",
    "UPDATE_REJECTED",
    "Lineage",
    "ModelDiverged",
    "ModelEvaluated",
    "ModelExported",
    "ModelVersionCreated",
    "UpdateAccepted",
    "UpdateChecked",
    "UpdateRejected",
    "accepted_update_key",
    "model_key",
    "model_stream",
    "server_state_key",
]

UPDATE_ACCEPTED = "update.accepted"
UPDATE_REJECTED = "update.rejected"
UPDATE_CHECKED = "update.checked"
MODEL_VERSION_CREATED = "model.version_created"
MODEL_EVALUATED = "model.evaluated"
MODEL_EXPORTED = "model.exported"
MODEL_DIVERGED = "model.diverged"

MODEL_EVENT_TYPES: tuple[str, ...] = (
    UPDATE_ACCEPTED,
    UPDATE_REJECTED,
    UPDATE_CHECKED,
    MODEL_VERSION_CREATED,
    MODEL_EVALUATED,
    MODEL_DIVERGED,
    MODEL_EXPORTED,
)

NORM_OUTLIER: Final = "norm_outlier"
"""The strike of an update a closed round left out (``round.closed`` ``dropped``): its
norm was over ``aggregation.norm_outlier`` times the median of the round's accepted
updates. Measured within the round, at its close, so whatever order updates arrive in,
the same ones are left out, and a round whose updates are all large is not refused."""

CHECK_MISMATCH: Final = "check_mismatch"
"""The strike of a peer whose update of a checked task was not confirmed: it disagreed
with the updates that agreed with each other (``update.checked``; the orchestrator folds
it as a strike, see ``aggregation.verify``)."""

NUMERIC_REFUSALS: frozenset[str] = frozenset({"non_finite", "norm_too_large"})
"""``update.rejected`` codes about an update's numbers, not its sender's honesty: a
diverging job gives them to every honest peer. They carry no ``strike`` when made; the
orchestrator counts them against their peers only in a round that closed with more
accepted updates than such refusals (an honest majority), and a round that ends with
none accepted and some of these fails the job (``training_diverged``)."""


def model_stream(job_id: str) -> str:
    """The stream of one job's model events, ``model:<job_id>``."""
    return f"model:{job_id}"


def model_key(job_id: str, version: int) -> str:
    """Where model version ``version`` of a job is stored."""
    return f"models/{job_id}/v{version}.safetensors"


def accepted_update_key(job_id: str, round_: int, attempt: int, shard: int, sha256: str) -> str:
    """Where the aggregator keeps the bytes of an update it accepted (content-addressed,
    written by the aggregator itself: no peer can write there, so what a round
    aggregates is always what was validated)."""
    return f"models/{job_id}/updates/r{round_}.a{attempt}.s{shard}.{sha256}.safetensors"


def server_state_key(job_id: str, version: int) -> str:
    """Where a stateful strategy's server state after ``version`` is stored."""
    return f"models/{job_id}/v{version}.server.safetensors"


@event_type(UPDATE_ACCEPTED)
class UpdateAccepted(EventData):
    """A peer's update passed validation and is part of its round's sum.

    ``weight`` is the shard's row count as sharding recorded it (never the peer's
    claim, which is kept as ``claimed_samples`` for the record). ``size`` is the bytes
    the peer uploaded, encoded as the job's ``training.compression`` (``compression``,
    its kind); ``dense_size`` the bytes of the same tensors in float32 (data only).
    Both are absent from events recorded before compression existed.
    """

    job_id: str
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    shard: int = Field(ge=0)
    task_id: str
    peer_id: str
    key: str
    sha256: str
    size: int = Field(ge=0)
    norm: float = Field(ge=0)
    weight: float = Field(gt=0)
    claimed_samples: int | None = None
    train_loss: float | None = None
    train_accuracy: float | None = None
    compression: str | None = Field(default=None, max_length=20)
    dense_size: int | None = Field(default=None, ge=0)
    checks: str | None = None
    """The task whose update this one checks (``task.assigned`` ``checks``): compared
    with it, never part of the round's sum unless it is confirmed and the checked one
    is not."""


@event_type(UPDATE_REJECTED)
class UpdateRejected(EventData):
    """A peer's update was refused; ``code`` is machine-readable, ``reason`` says why."""

    job_id: str
    round: int = Field(ge=0)
    attempt: int = Field(ge=0)
    shard: int | None = None
    task_id: str
    peer_id: str
    code: str
    reason: str
    strike: bool = False
    """The refusal counts against the sender: its update was invalid, or not its to
    announce (a late or superseded one is not). Enough strikes exclude a peer."""


@event_type(UPDATE_CHECKED)
class UpdateChecked(EventData):
    """Two accepted updates of one checked task (same round, shard, model and seed,
    trained by two peers) were compared: ``agree`` when their relative distance
    ``||a - b|| / max(||a||, ||b||)`` is within ``tolerance`` and neither is all zeros.

    ``task_id`` is the task whose update arrived first, ``other_task_id`` the other;
    ``checked`` is the task the check group is about (the shard's own task). The
    orchestrator folds these into confirmations and strikes (``check_mismatch``).
    """

    job_id: str
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    shard: int = Field(ge=0)
    checked: str
    task_id: str
    peer_id: str
    other_task_id: str
    other_peer_id: str
    distance: float = Field(ge=0)
    """``inf`` when the tensors' names or shapes differ."""
    tolerance: float = Field(gt=0)
    agree: bool


class Lineage(BaseModel):
    """What a model version was made from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    parent_version: int | None = None
    peers: tuple[str, ...] = ()
    updates: tuple[str, ...] = ()
    """The update objects' keys."""
    shards: tuple[int, ...] = ()


@event_type(MODEL_VERSION_CREATED)
class ModelVersionCreated(EventData):
    """Model version ``version`` is stored (``v0``: the initial model of the job)."""

    job_id: str
    version: int = Field(ge=0)
    key: str
    sha256: str
    size: int = Field(ge=0)
    strategy: str
    server_state_key: str | None = None
    lineage: Lineage = Lineage()


@event_type(MODEL_EVALUATED)
class ModelEvaluated(EventData):
    """A model version's metrics on the job's holdout."""

    job_id: str
    version: int = Field(ge=0)
    loss: float
    accuracy: float
    per_class_accuracy: tuple[float | None, ...] = ()
    samples: int = Field(ge=0)


@event_type(MODEL_DIVERGED)
class ModelDiverged(EventData):
    """Model version ``version`` cannot be used: its weights, or its loss on the
    holdout, are not finite. Appended instead of ``model.evaluated``; the job fails
    (``training_diverged``) and nothing is exported."""

    job_id: str
    version: int = Field(ge=0)
    reason: str


@event_type(MODEL_EXPORTED)
class ModelExported(EventData):
    """The final model is exported in both formats."""

    job_id: str
    version: int = Field(ge=1)
    pt_key: str
    pt_sha256: str
    safetensors_key: str
    safetensors_sha256: str
    format: Literal["peertrain-final-v1"] = "peertrain-final-v1"
