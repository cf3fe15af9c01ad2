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

from datetime import datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from peertrain.common.specs import ModelSpec, TrainingParams

__all__ = [
    "ACCEPTED",
    "CANCEL",
    "FAILED",
    "PROGRESS",
    "TASK",
    "UPDATE",
    "CancelMessage",
    "Download",
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


def peer_message_key(peer_id: str, kind: str) -> str:
    """Routing key of a message to a peer on ``peertrain.peers``."""
    return f"peer.{peer_id}.{kind}"


class _Body(BaseModel):
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
    feature_spec: dict[str, Any]
    """The dataset's feature spec as ``job.configured`` carries it (the peer reads only
    what :class:`peertrain.common.specs.FeatureSpec` needs from it)."""
    training: TrainingParams
    """The job's ``training`` block as the strategy configures it for the task
    (:meth:`peertrain.common.specs.AggregationSpec.configure_train`)."""
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
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    shard: int = Field(ge=0)


class TaskAcceptedBody(_TaskRef):
    """``peer.<id>.accepted``: I took the task and start now."""

    device: str | None = Field(default=None, max_length=40)


class TaskProgressBody(_TaskRef):
    """``peer.<id>.progress``: one local epoch done (``None``: not finite, training diverged)."""

    epoch: int = Field(ge=1)
    epochs: int = Field(ge=1)
    loss: float | None
    accuracy: float | None
    samples: int = Field(ge=0)
    duration_s: float = Field(ge=0)


class TaskFailedBody(_TaskRef):
    """``peer.<id>.failed``: training raised; the error and its traceback."""

    error: str = Field(max_length=2000)
    traceback: str = Field(default="", max_length=MAX_TRACEBACK)


class UpdateAnnounced(_TaskRef):
    """``peer.<id>.update``: my update is uploaded to ``key``."""

    key: str = Field(min_length=1, max_length=500)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)
    samples: int = Field(ge=0)
    """What the peer claims it trained on (recorded, never used as the weight)."""
    train_loss: float | None = None
    train_accuracy: float | None = None
    duration_s: float | None = Field(default=None, ge=0)
