"""Sharding strategies, one file each, chosen by the job's ``ShardingSpec``."""

from __future__ import annotations

from peertrain.common.specs import ShardingSpec

from .base import Assignment, IndexArray, LabelArray, ShardingStrategy
from .dirichlet import DirichletStrategy
from .fixed import FixedStrategy
from .iid import IidStrategy
from .stratified import StratifiedStrategy

__all__ = [
    "STRATEGIES",
    "Assignment",
    "DirichletStrategy",
    "FixedStrategy",
    "IidStrategy",
    "IndexArray",
    "LabelArray",
    "ShardingStrategy",
    "StratifiedStrategy",
    "strategy_for",
]

STRATEGIES: dict[str, type[ShardingStrategy]] = {
    cls.name: cls for cls in (IidStrategy, StratifiedStrategy, DirichletStrategy)
}
"""Strategy classes by name: one for each name in ``peertrain.common.specs.ShardingName``."""


def strategy_for(spec: ShardingSpec) -> ShardingStrategy:
    """The strategy a job asked for, configured by its ``sharding`` block."""
    return STRATEGIES[spec.strategy].from_spec(spec)
