"""Local training (what a peer runs each round) and evaluation."""

from .data import check_xy
from .evaluate import EvalMetrics, evaluate
from .loop import train_local
from .metrics import EpochMetrics, TrainResult
from .params import TrainingParams, derive_seed, parse_training_params

__all__ = [
    "EpochMetrics",
    "EvalMetrics",
    "TrainResult",
    "TrainingParams",
    "check_xy",
    "derive_seed",
    "evaluate",
    "parse_training_params",
    "train_local",
]
