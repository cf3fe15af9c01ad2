"""What a caller asks for when it creates a job (``POST /api/jobs``): the request as the
domain checks it (:func:`.request.plan_job`), and as the HTTP body carries it.

``model``, ``training`` and ``aggregation`` are the typed specs of
:mod:`peertrain.common.specs`, validated once when the request is parsed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from peertrain.common.specs import (
    AggregationSpec,
    MLPSpec,
    ModelSpec,
    ShardingName,
    TrainingParams,
)
from peertrain.common.text import Id, Name

__all__ = [
    "MAX_PEERS",
    "InitFrom",
    "JobRequest",
    "PeerSelection",
    "SelectionFilters",
    "ShardingRequest",
]

MAX_PEERS = 1000


class SelectionFilters(BaseModel):
    """Which peers a selection may pick."""

    model_config = ConfigDict(extra="forbid")

    device: Literal["cpu", "cuda", "mps"] | None = None
    min_memory_gb: float | None = Field(default=None, ge=0)


class PeerSelection(BaseModel):
    """Let the orchestrator pick ``count`` usable peers: the caller's own first, then the
    fastest it measured, then by claimed memory (capped)."""

    model_config = ConfigDict(extra="forbid")

    count: int = Field(ge=1, le=MAX_PEERS)
    filters: SelectionFilters = SelectionFilters()


class ShardingRequest(BaseModel):
    """How to split the data (the seed is the training seed)."""

    model_config = ConfigDict(extra="forbid")

    strategy: ShardingName = "iid"
    alpha: float = Field(default=0.5, gt=0, le=1000)


class InitFrom(BaseModel):
    """Start from another job's model version (``--init-from JOB[:vR]``)."""

    model_config = ConfigDict(extra="forbid")

    job_id: Id
    version: int | None = Field(
        default=None, ge=0, description="The version (round); default: the job's newest"
    )


class JobRequest(BaseModel):
    """The body of ``POST /api/jobs``.

    ``model``, ``training`` and ``aggregation`` are the typed specs of
    :mod:`peertrain.common.specs`, validated here once (a bad one is a 422 naming where,
    e.g. ``model.hidden.0``); what is left to check needs the dataset and the peers.
    """

    model_config = ConfigDict(extra="forbid")

    name: Name
    dataset_id: Id
    peers: list[Id] | None = Field(default=None, min_length=1, max_length=MAX_PEERS)
    selection: PeerSelection | None = None
    model: ModelSpec = Field(default_factory=lambda: MLPSpec(arch="mlp"))
    training: TrainingParams = TrainingParams()
    aggregation: AggregationSpec = AggregationSpec()
    sharding: ShardingRequest = ShardingRequest()
    init_from: InitFrom | None = Field(
        default=None,
        description="Start from another of your jobs' model version instead of fresh "
        "weights: the same model spec, on data of the same shape and classes",
    )
    init_weights: Id | None = Field(
        default=None,
        description="Start from weights you uploaded (POST /api/models/weights, its "
        "weights_id): their tensors must be exactly the model's (names, shapes, dtypes)",
    )

    @model_validator(mode="after")
    def _one_way_to_pick_peers(self) -> JobRequest:
        if (self.peers is None) == (self.selection is None):
            raise ValueError("give either peers (a list of ids) or selection, not both")
        if self.peers is not None and len(set(self.peers)) != len(self.peers):
            raise ValueError("peers must not repeat")
        if self.init_from is not None and self.init_weights is not None:
            raise ValueError("give init_from or init_weights, not both")
        return self
