"""What travels between the platform and a peer (not events: messages).

To a peer, on ``peertrain.peers`` with routing key ``peer.<id>.<kind>``:

``task``
    :class:`TaskMessage`: train one shard for one round. Built by the orchestrator from
    ``task.assigned`` with presigned URLs (GET the model version and the shard, POST the
    update), so the peer never holds storage credentials.
``cancel``
    :class:`CancelMessage`: stop the job's task now.

From a peer, on ``peertrain.telemetry`` with routing key ``peer.<id>.<kind>`` and the
peer's access token in the headers (consumers verify both, and that the task is the
peer's):

``accepted`` (:class:`TaskAcceptedBody`), ``progress`` (:class:`TaskProgressBody`),
``failed`` (:class:`TaskFailedBody`) -> the orchestrator;
``update`` (:class:`UpdateAnnounced`) -> the aggregator.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import BeforeValidator, ConfigDict, Field, ValidationInfo

from peertrain.common.specs import ModelSpec, TrainingParams
from peertrain.common.text import StoreText

from .datasets import FeatureSpec

__all__ = [
    "ACCEPTED",
    "CANCEL",
    "FAILED",
    "PROGRESS",
    "TASK",
    "UPDATE",
    "CancelMessage",
    "Download",
    "EpochReport",
    "TaskAcceptedBody",
    "TaskFailedBody",
    "TaskMessage",
    "TaskProgressBody",
    "UpdateAnnounced",
    "UploadForm",
    "peer_message_key",
]

TASK: Final = "task"
CANCEL: Final = "cancel"
ACCEPTED: Final = "accepted"
PROGRESS: Final = "progress"
UPDATE: Final = "update"
FAILED: Final = "failed"

MAX_TRACEBACK = 20_000
MAX_COUNT = 1_000_000
"""Bound of a peer-reported round, attempt, shard or epoch number."""
MAX_INT = 2**53
"""Bound of a peer-reported size or sample count (what every store and JSON hold exactly)."""
MAX_EARLIER = 1000
"""Bound of the earlier epochs one progress report carries."""


def peer_message_key(peer_id: str, kind: str) -> str:
    """Routing key of a message to a peer on ``peertrain.peers``."""
    return f"peer.{peer_id}.{kind}"


def _not_finite_is_none(value: Any, info: ValidationInfo) -> Any:
    """Built here (Python), a non-finite float means "not finite": ``None``, as it goes on
    the wire (pydantic writes NaN and Inf as ``null``). Off the wire (JSON), a NaN or an
    Inf literal is left for the field to refuse."""
    if info.mode == "python" and isinstance(value, float) and not math.isfinite(value):
        return None
    return value


Loss = Annotated[
    float | None, Field(ge=0, allow_inf_nan=False), BeforeValidator(_not_finite_is_none)
]
"""A loss a peer reports: finite, not negative (``None``: training diverged)."""

Share = Annotated[
    float | None, Field(ge=0, le=1, allow_inf_nan=False), BeforeValidator(_not_finite_is_none)
]
"""An accuracy a peer reports: a share in [0, 1] (``None``: not finite)."""

Duration = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""Seconds a peer reports: finite, not negative."""


class _Body(StoreText):
    """Messages to and from peers: frozen, and no NUL anywhere (the store cannot hold it)."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class Download(_Body):
    """An object to GET, with the sha256 its bytes must have."""

    url: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)
    key: str
    """The object's key: a stable name to cache it under (shards are kept across rounds)."""


class UploadForm(_Body):
    """A presigned POST: send ``fields`` plus the file (last) as multipart to ``url``."""

    url: str
    fields: dict[str, str]
    key: str
    max_bytes: int = Field(ge=1)


class TaskMessage(_Body):
    """``peer.<id>.task``: train ``shard`` of ``job_id`` for round ``round``."""

    type: Literal["task"] = "task"
    task_id: str
    job_id: str
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    shard: int = Field(ge=0)
    deadline: datetime
    model_version: int = Field(ge=0)
    model: Download
    data: Download
    upload: UploadForm
    model_spec: ModelSpec
    feature_spec: FeatureSpec
    """The dataset's feature spec, as ``job.configured`` carries it, less the columns'
    encodings (:meth:`~peertrain.common.events.datasets.FeatureSpec.for_peers`)."""
    training: TrainingParams
    """The job's ``training`` block (FedProx's ``proximal_mu`` included)."""
    seed: int
    """This task's seed (derived from the job's seed, the round and the shard)."""


class CancelMessage(_Body):
    """``peer.<id>.cancel``: stop the job's tasks (``task_id`` ``None``: all of them)."""

    type: Literal["cancel"] = "cancel"
    job_id: str
    task_id: str | None = None
    reason: str = "cancelled"


class _TaskRef(_Body):
    task_id: str = Field(min_length=1, max_length=200)
    job_id: str = Field(min_length=1, max_length=100)
    round: int = Field(ge=1, le=MAX_COUNT)
    attempt: int = Field(ge=1, le=MAX_COUNT)
    shard: int = Field(ge=0, le=MAX_COUNT)


class TaskAcceptedBody(_TaskRef):
    """``peer.<id>.accepted``: I took the task and start now."""

    device: str | None = Field(default=None, max_length=40)


class EpochReport(_Body):
    """One local epoch done, as its peer reports it (``None``: not finite, training
    diverged)."""

    epoch: int = Field(ge=1, le=MAX_COUNT)
    loss: Loss
    accuracy: Share
    samples: int = Field(ge=0, le=MAX_INT)
    duration_s: Duration


class TaskProgressBody(_TaskRef, EpochReport):
    """``peer.<id>.progress``: local epochs done, of ``epochs``: ``epoch`` the latest,
    ``earlier`` the ones before it since the peer's previous progress report.

    A peer reports at most about once a second, and its last epoch at once (so a task
    of fast epochs is one report, not one per epoch); a runtime that reports each epoch
    alone sends no ``earlier``."""

    epochs: int = Field(ge=1, le=MAX_COUNT)
    earlier: tuple[EpochReport, ...] = Field(default=(), max_length=MAX_EARLIER)


class TaskFailedBody(_TaskRef):
    """``peer.<id>.failed``: training raised; the error and its traceback."""

    error: str = Field(max_length=2000)
    traceback: str = Field(default="", max_length=MAX_TRACEBACK)


class UpdateAnnounced(_TaskRef):
    """``peer.<id>.update``: my update is uploaded to ``key``."""

    key: str = Field(min_length=1, max_length=500)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0, le=MAX_INT)
    samples: int = Field(ge=0, le=MAX_INT)
    """What the peer claims it trained on (recorded, never used as the weight)."""
    train_loss: Loss = None
    train_accuracy: Share = None
    duration_s: Duration | None = None
