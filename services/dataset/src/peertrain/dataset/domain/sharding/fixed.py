"""Shards the data names: each shard's rows given, not drawn by a seed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import Assignment, IndexArray, LabelArray, ShardingStrategy

__all__ = ["FixedStrategy"]


class FixedStrategy(ShardingStrategy):
    """The split a dataset brings (the simulation's data may name one, as partitioned
    federated datasets do): shard ``k`` is the rows ``shards[k]``.

    Not a job's choice (it is not in ``ShardingName``): whoever holds such data hands
    the strategy to the dataset application.

    Parameters
    ----------
    shards
        Each shard's row indices; together they must name every row.
    """

    name = "fixed"

    def __init__(self, shards: Sequence[IndexArray]) -> None:
        super().__init__()
        self.shards = tuple(shards)

    def _assign(self, labels: LabelArray, n_shards: int) -> Assignment:
        if len(self.shards) != n_shards:
            raise ValueError(f"the data has {len(self.shards)} shards for {n_shards} peers")
        assignment = np.full(len(labels), -1, dtype=np.int32)
        for k, rows in enumerate(self.shards):
            assignment[rows] = k
        if (assignment < 0).any():
            raise ValueError(f"{int((assignment < 0).sum())} rows are in no shard")
        return assignment
