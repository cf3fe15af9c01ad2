"""A job's ``aggregation`` block, validated, and the strategy it names."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import SpecInvalid
from ..zoo.specs import spec_errors
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


class AggregationSpec(BaseModel):
    """The job's ``aggregation`` block.

    Attributes
    ----------
    strategy
        ``fedavg``, ``fedprox``, ``fedadam``, ``trimmed_mean`` or ``median``.
    min_peers
        Fewest accepted updates a round may close with (the orchestrator's rule).
    round_deadline_s
        Seconds a round stays open (the orchestrator's rule).
    server_lr
        Server step; ``None`` for the strategy's default (1.0, or 0.1 for FedAdam).
    trim_fraction
        Share trimmed at each end by ``trimmed_mean``.
    max_update_norm
        Updates with a larger L2 norm are rejected; also sizes the exact accumulator.
    beta1, beta2, tau
        FedAdam's moment decays and adaptivity constant.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: Literal["fedavg", "fedprox", "fedadam", "trimmed_mean", "median"] = "fedavg"
    min_peers: int = Field(default=1, ge=1, le=10_000)
    round_deadline_s: float = Field(default=600.0, gt=0, le=7 * 24 * 3600)
    server_lr: float | None = Field(default=None, gt=0, le=100)
    trim_fraction: float = Field(default=0.1, ge=0, lt=0.5)
    max_update_norm: float = Field(default=100.0, gt=0, le=1e9)
    beta1: float = Field(default=0.9, ge=0, lt=1)
    beta2: float = Field(default=0.99, ge=0, lt=1)
    tau: float = Field(default=1e-3, gt=0, le=10)


def parse_aggregation_spec(value: Any) -> AggregationSpec:
    """Validate an ``aggregation`` block.

    Raises
    ------
    SpecInvalid
        With one ``{"loc", "msg"}`` item per problem in ``detail``.
    """
    if isinstance(value, AggregationSpec):
        return value
    try:
        return AggregationSpec.model_validate(value or {})
    except ValidationError as exc:
        raise SpecInvalid("the aggregation spec is not valid", detail=spec_errors(exc)) from None


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
