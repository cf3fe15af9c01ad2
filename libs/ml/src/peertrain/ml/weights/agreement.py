"""Checked work: whether two peers' updates for the same task agree.

A checked task is trained twice, by two peers, from the same model, shard and seed. An
honest pair differs only by floating-point summation order (thread counts, BLAS kernels,
CPU models): on the sklearn-digits MLP, one epoch, 1 thread against 2, the relative
distance is 1.4e-7. A lazy peer is far: zeros give 1.0, Gaussian noise of the same norm
about 1.4, training on a tenth of the shard 0.89 (``benchmarks`` calibrate it again).
:data:`DEFAULT_TOLERANCE` sits orders of magnitude between the two.

Which tasks are checked is the orchestrator's rule
(``peertrain.orchestrator.domain.checks``: probation, escalation, a seeded share), so it
is the same on every instance and in the simulation, and a peer cannot tell from its
task whether it is being checked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

__all__ = ["DEFAULT_TOLERANCE", "agree", "relative_distance"]

DEFAULT_TOLERANCE = 1e-3
"""Largest relative distance two honest runs of one task may show."""


def relative_distance(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor]) -> float:
    """``||a - b|| / max(||a||, ||b||)`` over every floating tensor (``inf`` when the
    names or shapes differ; 0 when both are zero)."""
    if a.keys() != b.keys():
        return math.inf
    diff = norm_a = norm_b = 0.0
    for name, x in a.items():
        y = b[name]
        if x.shape != y.shape:
            return math.inf
        if not x.is_floating_point():
            continue
        x64, y64 = x.to(torch.float64), y.to(torch.float64)
        diff += float((x64 - y64).square().sum())
        norm_a += float(x64.square().sum())
        norm_b += float(y64.square().sum())
    scale = math.sqrt(max(norm_a, norm_b))
    if scale == 0.0:
        return 0.0
    distance = math.sqrt(diff) / scale
    return distance if math.isfinite(distance) else math.inf


def agree(
    a: Mapping[str, torch.Tensor],
    b: Mapping[str, torch.Tensor],
    tolerance: float = DEFAULT_TOLERANCE,
) -> bool:
    """Whether two updates of one task are the same work (within ``tolerance``)."""
    return relative_distance(a, b) <= tolerance
