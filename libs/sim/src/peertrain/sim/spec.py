"""A simulated job's spec: the platform's job request, without dataset and peers."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from peertrain.common.specs import AggregationSpec, MLPSpec, ModelSpec, TrainingParams
from peertrain.orchestrator.domain.job_request import ShardingRequest

__all__ = ["IGNORED_KEYS", "JobSpec", "parse_job_spec"]

IGNORED_KEYS = ("name", "dataset_id", "peers", "selection")
"""Keys of a platform job file that a simulation has no use for (it brings its own
data and peers)."""


class JobSpec(BaseModel):
    """``model``, ``training``, ``aggregation`` and ``sharding``, typed and checked as
    ``POST /api/jobs`` checks them (the same models)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: ModelSpec = Field(default_factory=lambda: MLPSpec(arch="mlp"))
    training: TrainingParams = TrainingParams()
    aggregation: AggregationSpec = AggregationSpec()
    sharding: ShardingRequest = ShardingRequest()


def parse_job_spec(value: JobSpec | dict[str, Any] | None) -> JobSpec:
    """A job spec from a parsed job file (its ``name``, ``dataset_id``, ``peers`` and
    ``selection`` are left out).

    Raises
    ------
    pydantic.ValidationError
        Naming each problem's place, e.g. ``model.hidden.0``.
    """
    if isinstance(value, JobSpec):
        return value
    body = {k: v for k, v in (value or {}).items() if k not in IGNORED_KEYS}
    return JobSpec.model_validate(body)
