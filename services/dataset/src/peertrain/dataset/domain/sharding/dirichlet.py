"""``dirichlet``: non-IID label skew, class proportions drawn from Dir(alpha).

For each class, the shares of the N shards are drawn from a symmetric Dirichlet
distribution with concentration ``alpha`` (small ``alpha``: each class lives on few
shards; large ``alpha``: close to IID), and the class's shuffled rows are cut by those
shares. Draws that leave a shard empty are redrawn (the generator moves on, so the
result is still a function of the seed); if that keeps failing, each empty shard takes
one row from the largest shard.
"""

from __future__ import annotations

from typing import Self

import numpy as np
from numpy.typing import NDArray

from peertrain.common.specs import ShardingSpec

from .base import LabelArray, ShardingStrategy

__all__ = ["DirichletStrategy"]

MAX_DRAWS = 100


class DirichletStrategy(ShardingStrategy):
    """Label-skewed shards (Hsu et al., 2019), every one non-empty.

    Parameters
    ----------
    alpha
        Concentration of the symmetric Dirichlet prior (> 0).
    seed
        Seeds the generator.
    """

    name = "dirichlet"

    def __init__(self, alpha: float = 0.5, seed: int = 0) -> None:
        if not alpha > 0:
            raise ValueError(f"alpha must be positive, got {alpha}")
        super().__init__(seed)
        self.alpha = alpha

    @classmethod
    def from_spec(cls, spec: ShardingSpec) -> Self:
        """Seeded, with the job's ``alpha``."""
        return cls(alpha=spec.alpha, seed=spec.seed)

    def _assign(self, labels: LabelArray, n_shards: int) -> NDArray[np.integer]:
        rng = self.rng()
        by_class = [rng.permutation(np.flatnonzero(labels == c)) for c in np.unique(labels)]
        assignment = np.empty(len(labels), dtype=np.int32)
        for _ in range(MAX_DRAWS):
            for rows in by_class:
                shares = rng.dirichlet(np.full(n_shards, self.alpha))
                cuts = np.round(np.cumsum(shares)[:-1] * len(rows)).astype(np.int64)
                for k, part in enumerate(np.split(rows, cuts)):
                    assignment[part] = k
            if (np.bincount(assignment, minlength=n_shards) > 0).all():
                return assignment
        return _fill_empty(assignment, n_shards)


def _fill_empty(assignment: NDArray[np.int32], n_shards: int) -> NDArray[np.int32]:
    """Give each empty shard one row of the currently largest shard (deterministic)."""
    sizes = np.bincount(assignment, minlength=n_shards)
    for k in range(n_shards):
        if sizes[k] == 0:
            donor = int(np.argmax(sizes))  # the first of the largest
            row = int(np.flatnonzero(assignment == donor)[-1])
            assignment[row] = k
            sizes[donor] -= 1
            sizes[k] += 1
    return assignment
