"""A job's ``aggregation`` block, validated, and the strategy it names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from peertrain.common.specs.aggregation import AggregationSpec, parse_aggregation_spec

from .base import Strategy
from .fedadam import FedAdam
from .fedavg import FedAvg
from .fedprox import FedProx
from .median import Median
from .trimmed_mean import TrimmedMean

__all__ = ["STRATEGIES", "AggregationSpec", "make_strategy", "parse_aggregation_spec"]

STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (FedAvg, FedProx, FedAdam, TrimmedMean, Median)
}
"""Strategy classes by name."""


def make_strategy(
    spec: Any,
    *,
    proximal_mu: float = 0.0,
    device: torch.device | str | None = None,
    spill_dir: str | Path | None = None,
) -> Strategy:
    """The strategy an ``aggregation`` block names, configured by it.

    Parameters
    ----------
    spec
        The block (mapping or :class:`AggregationSpec`).
    proximal_mu
        The job's training ``proximal_mu`` (recorded by FedProx).
    device
        Accumulation device for the FedAvg family.
    spill_dir
        Temporary folder for the robust strategies.
    """
    agg = parse_aggregation_spec(spec)
    bound = agg.max_update_norm
    if agg.strategy == "fedadam":
        return FedAdam(
            server_lr=agg.server_lr if agg.server_lr is not None else 0.1,
            beta1=agg.beta1,
            beta2=agg.beta2,
            tau=agg.tau,
            update_bound=bound,
            device=device,
        )
    lr = agg.server_lr if agg.server_lr is not None else 1.0
    if agg.strategy == "fedprox":
        return FedProx(proximal_mu=proximal_mu, server_lr=lr, update_bound=bound, device=device)
    if agg.strategy == "fedavg":
        return FedAvg(server_lr=lr, update_bound=bound, device=device)
    if agg.strategy == "trimmed_mean":
        return TrimmedMean(trim_fraction=agg.trim_fraction, server_lr=lr, spill_dir=spill_dir)
    return Median(server_lr=lr, spill_dir=spill_dir)
