"""What local training reports: per-epoch metrics and the result of a round's work."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

__all__ = ["EpochMetrics", "TrainResult"]


@dataclass(frozen=True)
class EpochMetrics:
    """One local epoch.

    Attributes
    ----------
    epoch
        1-based epoch number.
    loss
        Mean training loss over the epoch's batches (without the proximal term).
    accuracy
        Share of the epoch's samples predicted right (as the model was at each batch).
    samples
        Samples seen in the epoch.
    duration_s
        Wall time of the epoch.
    """

    epoch: int
    loss: float
    accuracy: float
    samples: int
    duration_s: float

    def as_dict(self) -> dict[str, float | int]:
        """Plain JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class TrainResult:
    """A peer's work for one round.

    Attributes
    ----------
    delta
        ``trained - initial`` weights, on the CPU: the update a peer uploads.
    epochs
        One :class:`EpochMetrics` per local epoch.
    samples
        Samples in the shard.
    duration_s
        Wall time of the whole training.
    """

    delta: dict[str, torch.Tensor]
    epochs: tuple[EpochMetrics, ...]
    samples: int
    duration_s: float

    @property
    def final(self) -> EpochMetrics:
        """The last epoch's metrics."""
        return self.epochs[-1]
