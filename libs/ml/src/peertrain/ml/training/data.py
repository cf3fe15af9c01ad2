"""Checking training and evaluation tensors before use."""

from __future__ import annotations

import torch

from ..errors import DataInvalid

__all__ = ["check_xy", "num_outputs"]


def check_xy(x: torch.Tensor, y: torch.Tensor, num_classes: int | None = None) -> None:
    """Refuse tensors that cannot be a labelled sample set.

    ``x`` is floating with samples along dim 0; ``y`` holds one int64 class index per
    sample, in ``[0, num_classes)`` when ``num_classes`` is given.

    Raises
    ------
    DataInvalid
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() < 2:
        raise DataInvalid("x must be a floating tensor of shape (samples, ...)")
    if not isinstance(y, torch.Tensor) or y.dtype != torch.int64 or y.dim() != 1:
        raise DataInvalid("y must be a 1-D int64 tensor of class indices")
    if x.shape[0] != y.shape[0]:
        raise DataInvalid(f"x has {x.shape[0]} samples, y {y.shape[0]}")
    if x.shape[0] == 0:
        raise DataInvalid("there are no samples")
    low, high = int(y.min()), int(y.max())
    if low < 0 or (num_classes is not None and high >= num_classes):
        raise DataInvalid(f"labels span [{low}, {high}], outside [0, {num_classes})")


def num_outputs(model: torch.nn.Module, x: torch.Tensor) -> int:
    """Width of the model's output for one sample (its number of classes)."""
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        width = int(model(x[:1]).shape[-1])
    model.train(was_training)
    return width
