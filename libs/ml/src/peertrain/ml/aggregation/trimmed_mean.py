"""Coordinate-wise trimmed mean."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Self

import torch

from peertrain.common.specs import AggregationSpec

from .base import NO_SETUP, Setup
from .robust import RobustStrategy

__all__ = ["TrimmedMean", "trim_count"]


def trim_count(k: int, trim_fraction: float) -> int:
    """Values dropped at *each* end: ``floor(trim_fraction * k)``, leaving at least one."""
    return min(math.floor(trim_fraction * k), (k - 1) // 2)


class TrimmedMean(RobustStrategy):
    """Per coordinate, drop the ``floor(trim_fraction * K)`` smallest and largest values of
    the K updates and average the rest (as ``scipy.stats.trim_mean`` does).

    The kept values are added in sorted order, one row after another in float64.
    """

    name = "trimmed_mean"

    def __init__(
        self,
        *,
        trim_fraction: float = 0.1,
        server_lr: float = 1.0,
        spill_dir: str | Path | None = None,
        chunk_bytes: int = 4 * 1024 * 1024,
        buffers: Iterable[str] = (),
    ) -> None:
        super().__init__(
            server_lr=server_lr, spill_dir=spill_dir, chunk_bytes=chunk_bytes, buffers=buffers
        )
        if not 0 <= trim_fraction < 0.5:
            raise ValueError(f"trim_fraction must be in [0, 0.5), not {trim_fraction}")
        self.trim_fraction = float(trim_fraction)

    @classmethod
    def from_spec(cls, spec: AggregationSpec, setup: Setup = NO_SETUP) -> Self:
        return cls(
            trim_fraction=spec.trim_fraction,
            server_lr=cls.server_lr_of(spec),
            spill_dir=setup.spill_dir,
            buffers=setup.buffers,
        )

    def reduce(self, ordered: torch.Tensor) -> torch.Tensor:
        k = ordered.shape[0]
        cut = trim_count(k, self.trim_fraction)
        kept = ordered[cut : k - cut]
        total = kept[0].clone()
        for row in kept[1:]:
            total += row
        return total / kept.shape[0]
