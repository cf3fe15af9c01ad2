"""``stratified``: every shard gets each class in proportion (within one row)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .base import LabelArray, ShardingStrategy

__all__ = ["StratifiedStrategy"]


class StratifiedStrategy(ShardingStrategy):
    """Deal each class's rows round-robin over the shards, in a seeded order.

    Rows are grouped by class (shuffled within each class) and the grouped sequence is
    dealt ``0, 1, ..., N-1, 0, 1, ...``. A class of ``n_c`` rows occupies a contiguous
    run of the sequence, so every shard receives ``floor(n_c / N)`` or ``ceil(n_c / N)``
    of its rows, and the shard sizes differ by at most one. Which shard gets an extra
    row is decided by a seeded permutation of the shard numbers.
    """

    name = "stratified"

    def _assign(self, labels: LabelArray, n_shards: int) -> NDArray[np.integer]:
        rng = self.rng()
        shard_of_slot = rng.permutation(n_shards).astype(np.int32)
        assignment = np.empty(len(labels), dtype=np.int32)
        start = 0  # position of the class's run in the dealt sequence
        for c in np.unique(labels):  # one class at a time: memory O(class)
            rows = rng.permutation(np.flatnonzero(labels == c))
            slots = (start + np.arange(len(rows), dtype=np.int64)) % n_shards
            assignment[rows] = shard_of_slot[slots]
            start += len(rows)
        return assignment
