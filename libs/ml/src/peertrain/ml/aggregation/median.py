"""Coordinate-wise median."""

from __future__ import annotations

import torch

from .robust import RobustStrategy

__all__ = ["Median"]


class Median(RobustStrategy):
    """Per coordinate, the median of the K updates; for even K the mean of the two middle
    values (as ``numpy.median`` and ``torch.quantile(q=0.5)`` define it)."""

    name = "median"

    def reduce(self, ordered: torch.Tensor) -> torch.Tensor:
        k = ordered.shape[0]
        if k % 2:
            return ordered[k // 2].clone()
        return (ordered[k // 2 - 1] + ordered[k // 2]) / 2
