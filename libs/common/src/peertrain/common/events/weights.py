"""Starting weights a user uploaded (appended by the aggregator), on ``weights:<id>``.

A job may start from them (``init_weights``): the orchestrator checks, before the job
exists, that their tensors are exactly the ones the job's model has (names, shapes,
dtypes), from the table this event carries; the aggregator's version 0 is then these
tensors, bit for bit. The object is stored as safetensors whatever was uploaded (a
``.pt`` state dict is read with ``torch.load(weights_only=True)`` and written again).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .catalogue import event_type
from .envelope import EventData

__all__ = [
    "MAX_WEIGHT_TENSORS",
    "WEIGHTS_EVENT_TYPES",
    "WEIGHTS_UPLOADED",
    "TensorInfo",
    "WeightsSource",
    "WeightsUploaded",
    "weights_key",
    "weights_stream",
]

WEIGHTS_UPLOADED = "weights.uploaded"
WEIGHTS_EVENT_TYPES: tuple[str, ...] = (WEIGHTS_UPLOADED,)

MAX_WEIGHT_TENSORS = 10_000
"""Most tensors an upload may hold (ResNet-152 has about 1,000)."""


class TensorInfo(BaseModel):
    """One tensor of a state dict: its name, dtype (safetensors' code, e.g. ``F32``)
    and shape."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=300)
    dtype: str = Field(min_length=1, max_length=8)
    shape: tuple[int, ...] = Field(max_length=8)


@event_type(WEIGHTS_UPLOADED)
class WeightsUploaded(EventData):
    """A user uploaded starting weights; ``key`` holds them as safetensors."""

    weights_id: str
    owner_id: str
    name: str = Field(max_length=200)
    key: str
    sha256: str
    size: int = Field(ge=0)
    tensors: tuple[TensorInfo, ...] = Field(max_length=MAX_WEIGHT_TENSORS)


class WeightsSource(BaseModel):
    """Uploaded weights a job starts from (its version 0 is these tensors)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weights_id: str
    key: str
    sha256: str


def weights_stream(weights_id: str) -> str:
    """The stream of one upload's events, ``weights:<id>``."""
    return f"weights:{weights_id}"


def weights_key(weights_id: str) -> str:
    """Where uploaded weights are stored."""
    return f"weights/{weights_id}.safetensors"
