"""Aggregation strategies: one file per algorithm, all with the same round contract.

See :mod:`peertrain.ml.aggregation.base` for the contract and
:mod:`peertrain.ml.aggregation.exact_sum` for why results do not depend on arrival order.
"""

from .base import RoundAccumulator, Strategy
from .calibrated import Calibrated, CalibratedAccumulator
from .config import STRATEGIES, AggregationSpec, make_strategy, parse_aggregation_spec
from .exact_sum import MAX_WEIGHT_RATIO, ExactSum
from .fedadam import FedAdam
from .fedavg import FedAvg, MeanAccumulator
from .fedprox import FedProx
from .kernels import fold_exact, numba_available
from .median import Median
from .robust import RobustStrategy, SpillAccumulator
from .spill import SpillStore
from .trimmed_mean import TrimmedMean, trim_count

__all__ = [
    "MAX_WEIGHT_RATIO",
    "STRATEGIES",
    "AggregationSpec",
    "Calibrated",
    "CalibratedAccumulator",
    "ExactSum",
    "FedAdam",
    "FedAvg",
    "FedProx",
    "MeanAccumulator",
    "Median",
    "RobustStrategy",
    "RoundAccumulator",
    "SpillAccumulator",
    "SpillStore",
    "Strategy",
    "TrimmedMean",
    "fold_exact",
    "make_strategy",
    "numba_available",
    "parse_aggregation_spec",
    "trim_count",
]
