"""``iid``: a seeded shuffle cut into equal parts (sizes differ by at most one)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .base import LabelArray, ShardingStrategy

__all__ = ["IidStrategy"]


class IidStrategy(ShardingStrategy):
    """Independent, identically distributed shards: every row lands anywhere alike."""

    name = "iid"

    def _assign(self, labels: LabelArray, n_shards: int) -> NDArray[np.integer]:
        order = self.rng().permutation(len(labels))
        assignment = np.empty(len(labels), dtype=np.int32)
        for k, rows in enumerate(np.array_split(order, n_shards)):
            assignment[rows] = k
        return assignment
