"""A job's ``aggregation`` block, validated, and the strategy it names (one registry)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch

from peertrain.common.specs import TrainingParams, parse_training_params
from peertrain.common.specs.aggregation import AggregationSpec, parse_aggregation_spec

from .base import Setup, Strategy
from .calibrated import Calibrated
from .fedadam import FedAdam
from .fedavg import FedAvg
from .fedprox import FedProx
from .median import Median
from .trimmed_mean import TrimmedMean

__all__ = ["STRATEGIES", "AggregationSpec", "make_strategy", "parse_aggregation_spec"]

STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (FedAvg, FedProx, FedAdam, TrimmedMean, Median)
}
"""Strategy classes by name: one for each name in ``peertrain.common.specs.AggregationName``."""


def make_strategy(
    spec: Any,
    *,
    training: TrainingParams | Mapping[str, Any] | None = None,
    device: torch.device | str | None = None,
    spill_dir: str | Path | None = None,
    buffers: Iterable[str] = (),
) -> Strategy:
    """The strategy an ``aggregation`` block names, built by its class's ``from_spec``
    (wrapped in :class:`~.calibrated.Calibrated` for ``calibration: cached``).

    Parameters
    ----------
    spec
        The block (:class:`AggregationSpec`, or a mapping to validate).
    training
        The job's ``training`` block (FedProx records its ``proximal_mu``):
        :class:`TrainingParams`, or a mapping to validate.
    device
        Accumulation device for the FedAvg family.
    spill_dir
        Temporary folder for the robust strategies.
    buffers
        The model's buffer names (:func:`peertrain.ml.weights.buffer_names`), which
        every strategy averages plainly (see :class:`~.base.Setup`).
    """
    agg = parse_aggregation_spec(spec)
    cls = Calibrated if agg.calibration == "cached" else STRATEGIES[agg.strategy]
    setup = Setup(parse_training_params(training), device, spill_dir, frozenset(buffers))
    return cls.from_spec(agg, setup)
