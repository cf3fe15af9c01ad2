"""Local training (what a peer runs each round) and evaluation.

The ``training`` block (``TrainingParams``) and ``derive_seed`` are
:mod:`peertrain.common.specs`.
"""

from .data import check_xy
from .evaluate import EvalMetrics, evaluate
from .loop import train_local
from .metrics import EpochMetrics, TrainResult
from .stepper import cuda_only_settings

__all__ = [
    "EpochMetrics",
    "EvalMetrics",
    "TrainResult",
    "check_xy",
    "cuda_only_settings",
    "evaluate",
    "train_local",
]
