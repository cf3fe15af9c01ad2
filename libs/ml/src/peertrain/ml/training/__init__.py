"""Local training (what a peer runs each round) and evaluation.

The ``training`` block (``TrainingParams``) and ``derive_seed`` are
:mod:`peertrain.common.specs`.
"""

from .data import check_xy, read_samples
from .evaluate import EvalMetrics, evaluate
from .inputs import Inputs
from .loop import train_local
from .metrics import EpochMetrics, TrainResult
from .stepper import cuda_only_settings

__all__ = [
    "EpochMetrics",
    "EvalMetrics",
    "Inputs",
    "TrainResult",
    "check_xy",
    "cuda_only_settings",
    "evaluate",
    "read_samples",
    "train_local",
]
