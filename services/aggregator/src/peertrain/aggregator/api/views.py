"""The aggregator API's answers (HTTP response bodies)."""

from __future__ import annotations

import math
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from peertrain.common.events.weights import TensorInfo, WeightsUploaded

__all__ = ["Evaluation", "FinalPublic", "JobModelsPublic", "VersionPublic", "WeightsAccepted"]


class _Public(BaseModel):
    model_config = ConfigDict(frozen=True)


class Evaluation(_Public):
    """A version's metrics on the job's holdout."""

    loss: float
    accuracy: float
    per_class_accuracy: tuple[float | None, ...]
    samples: int
    evaluated_at: datetime | None


class VersionPublic(_Public):
    """One stored model version."""

    version: int
    key: str
    sha256: str
    size: int
    created_at: datetime
    strategy: str
    parent_version: int | None
    peers: tuple[str, ...]
    shards: tuple[int, ...]
    updates: tuple[str, ...]
    evaluation: Evaluation | None


class FinalPublic(_Public):
    """The exported final model (download it from ``/{job_id}/final``)."""

    version: int
    pt_key: str
    pt_sha256: str
    safetensors_key: str
    safetensors_sha256: str


class JobModelsPublic(_Public):
    """Every model version of one job."""

    job_id: str
    rounds: int | None
    versions: list[VersionPublic]
    latest_version: int | None
    best_version: int | None = Field(
        default=None,
        description="The evaluated version with the highest holdout accuracy (ties: lower"
        " loss, then the later version); download it at `versions/best`",
    )
    final_available: bool
    final: FinalPublic | None


class WeightsAccepted(_Public):
    """Starting weights stored: start a job from them with ``init_weights``."""

    weights_id: str
    name: str
    size: int = Field(description="Bytes stored (as safetensors)")
    sha256: str
    parameters: int = Field(description="Values in all its tensors")
    tensors: tuple[TensorInfo, ...]

    @classmethod
    def of(cls, uploaded: WeightsUploaded) -> WeightsAccepted:
        """From the ``weights.uploaded`` appended."""
        return cls(
            weights_id=uploaded.weights_id,
            name=uploaded.name,
            size=uploaded.size,
            sha256=uploaded.sha256,
            parameters=sum(math.prod(t.shape) for t in uploaded.tensors),
            tensors=uploaded.tensors,
        )
