"""Job events (appended by the orchestrator).

``job.created`` is the contract the dataset service shards from and the aggregator
builds its model from: it carries the whole job specification as the user gave it,
validated by the orchestrator. Later issues add ``job.started``, ``round.opened``, ...
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from peertrain.common.specs.sharding import ShardingName

from .catalogue import event_type
from .envelope import EventData

__all__ = ["JOB_CREATED", "JobCreated", "ShardingSpec", "job_stream"]

JOB_CREATED = "job.created"


def job_stream(job_id: str) -> str:
    """The stream of one job's events, ``job:<id>``."""
    return f"job:{job_id}"


class ShardingSpec(BaseModel):
    """How a dataset is split into one shard per peer (deterministic per seed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: ShardingName = "iid"
    alpha: float = Field(default=0.5, gt=0)
    seed: int = 0


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
    model: dict[str, Any] = Field(default_factory=dict)
    training: dict[str, Any] = Field(default_factory=dict)
    aggregation: dict[str, Any] = Field(default_factory=dict)
