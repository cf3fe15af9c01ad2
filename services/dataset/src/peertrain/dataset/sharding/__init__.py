"""Sharding strategies, one file each, chosen by the job's ``ShardingSpec``."""

from __future__ import annotations

from peertrain.common.events.jobs import ShardingSpec

from .base import Assignment, IndexArray, LabelArray, ShardingStrategy
from .dirichlet import DirichletStrategy
from .iid import IidStrategy
from .stratified import StratifiedStrategy

__all__ = [
    "STRATEGIES",
    "Assignment",
    "DirichletStrategy",
    "IidStrategy",
    "IndexArray",
    "LabelArray",
    "ShardingStrategy",
    "StratifiedStrategy",
    "strategy_for",
]

STRATEGIES: dict[str, type[ShardingStrategy]] = {
    IidStrategy.name: IidStrategy,
    StratifiedStrategy.name: StratifiedStrategy,
    DirichletStrategy.name: DirichletStrategy,
}


def strategy_for(spec: ShardingSpec) -> ShardingStrategy:
    """The strategy a job asked for, seeded as it asked."""
    if spec.strategy == DirichletStrategy.name:
        return DirichletStrategy(alpha=spec.alpha, seed=spec.seed)
    return STRATEGIES[spec.strategy](seed=spec.seed)
