"""The sharding strategy base: training rows -> the shard each row goes to.

A strategy is a pure function of the labels, the number of shards and a seed: the same
inputs give the same shards on every machine. :meth:`ShardingStrategy.assign` gives the
shard of every row (a compact int32 array, so millions of rows stay cheap);
:meth:`ShardingStrategy.split` gives each shard's ascending row indices. Either way the
shards partition the rows, and none is empty.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Self

import numpy as np
from numpy.typing import NDArray

from peertrain.common.specs import ShardingSpec

from ..errors import TooFewRows

__all__ = ["Assignment", "IndexArray", "LabelArray", "ShardingStrategy"]

IndexArray = NDArray[np.int64]
LabelArray = NDArray[np.integer]
Assignment = NDArray[np.int32]


class ShardingStrategy(ABC):
    """Split training rows into ``n_shards`` non-empty shards, deterministically.

    Parameters
    ----------
    seed
        Seeds the strategy's random generator (NumPy's PCG64).
    """

    name: ClassVar[str]
    """A job's ``sharding.strategy`` (a ``ShardingName``), or what names a split no job
    chooses (:class:`~.fixed.FixedStrategy`)."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    @classmethod
    def from_spec(cls, spec: ShardingSpec) -> Self:
        """The strategy as a job's ``sharding`` block configures it (seeded as it asks)."""
        return cls(seed=spec.seed)

    def rng(self) -> np.random.Generator:
        """A fresh generator for one call (so calls are repeatable)."""
        return np.random.default_rng(self.seed)

    def assign(self, labels: LabelArray, n_shards: int) -> Assignment:
        """The shard (``0 .. n_shards - 1``) of every row.

        Raises
        ------
        TooFewRows
            Fewer rows than shards: some shard would be empty.
        """
        if n_shards < 1:
            raise ValueError(f"n_shards must be at least 1, got {n_shards}")
        labels = np.asarray(labels)
        if labels.ndim != 1:
            raise ValueError("labels must be one-dimensional")
        if len(labels) < n_shards:
            raise TooFewRows(
                f"{len(labels)} training rows cannot fill {n_shards} shards",
                rows=len(labels),
                shards=n_shards,
            )
        assignment = self._assign(labels, n_shards).astype(np.int32, copy=False)
        sizes = np.bincount(assignment, minlength=n_shards)
        if len(sizes) != n_shards or not (sizes > 0).all():
            raise AssertionError(f"{self.name} left a shard empty or out of range: {sizes}")
        return assignment

    def split(self, labels: LabelArray, n_shards: int) -> list[IndexArray]:
        """The row indices of each shard, ascending; a partition of all rows."""
        assignment = self.assign(labels, n_shards)
        order = np.argsort(assignment, kind="stable")  # stable: rows stay ascending
        sizes = np.bincount(assignment, minlength=n_shards)
        return [part.astype(np.int64) for part in np.split(order, np.cumsum(sizes)[:-1])]

    @abstractmethod
    def _assign(self, labels: LabelArray, n_shards: int) -> NDArray[np.integer]:
        """Strategy-specific assignment (``len(labels) >= n_shards >= 1`` holds)."""
