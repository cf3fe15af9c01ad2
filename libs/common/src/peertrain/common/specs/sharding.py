"""A job's ``sharding`` block (``peertrain.dataset.domain.sharding`` implements the strategies)."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SHARDING_STRATEGIES", "ShardingName", "ShardingSpec"]

ShardingName = Literal["iid", "stratified", "dirichlet"]
"""How a dataset may be split into shards: declared here once, used by the job spec, the
job request and the dataset service's strategy registry."""

SHARDING_STRATEGIES: tuple[str, ...] = get_args(ShardingName)


class ShardingSpec(BaseModel):
    """How a dataset is split into one shard per peer (deterministic per seed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: ShardingName = "iid"
    alpha: float = Field(default=0.5, gt=0)
    seed: int = 0
