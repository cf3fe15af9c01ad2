"""The sharding strategies a job may name (``peertrain.dataset.sharding`` implements them)."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["SHARDING_STRATEGIES", "ShardingName"]

ShardingName = Literal["iid", "stratified", "dirichlet"]
"""How a dataset may be split into shards: declared here once, used by the job spec, the
job request and the dataset service's strategy registry."""

SHARDING_STRATEGIES: tuple[str, ...] = get_args(ShardingName)
