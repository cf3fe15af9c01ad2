"""HTTP schemas of the aggregator."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

__all__ = ["Evaluation", "FinalPublic", "JobModelsPublic", "VersionPublic"]


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
    final_available: bool
    final: FinalPublic | None
