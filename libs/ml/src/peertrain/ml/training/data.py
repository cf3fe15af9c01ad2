"""Reading and checking training and evaluation tensors before use."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import torch

from ..errors import DataInvalid

__all__ = ["check_xy", "num_outputs", "read_samples"]


def read_samples(source: Path | bytes) -> tuple[torch.Tensor, torch.Tensor]:
    """A shard or holdout (``npz-v1``): ``X`` as float32, or uint8 for pixels, and ``y``
    as int64 tensors; never unpickles anything.

    Raises
    ------
    DataInvalid
        Not an ``.npz``, an object array, a missing member, or a wrong dtype or shape.
    """
    try:
        with np.load(
            io.BytesIO(source) if isinstance(source, bytes) else source, allow_pickle=False
        ) as npz:
            names = set(npz.files)
            if not {"X", "y"} <= names:
                raise DataInvalid(f"the data has members {sorted(names)[:10]}, needs X and y")
            x, y = npz["X"], npz["y"]
    except DataInvalid:
        raise
    except Exception as exc:  # not a zip, a pickled (object) array, a truncated member
        raise DataInvalid(f"the data is not a valid npz: {exc}") from exc
    if not (x.dtype.kind == "f" or x.dtype == np.uint8) or x.ndim < 2:
        raise DataInvalid(
            f"X must be floating or uint8 with samples along axis 0, got {x.dtype}{x.shape}"
        )
    if y.dtype.kind not in "iu" or y.ndim != 1:
        raise DataInvalid(f"y must be 1-D integer class indices, got {y.dtype}{y.shape}")
    if x.shape[0] != y.shape[0]:
        raise DataInvalid(f"X has {x.shape[0]} samples, y {y.shape[0]}")
    dtype = np.uint8 if x.dtype == np.uint8 else np.float32
    xs = torch.from_numpy(np.ascontiguousarray(x, dtype=dtype))
    ys = torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64))
    return xs, ys


def check_xy(
    x: torch.Tensor, y: torch.Tensor, num_classes: int | None = None, *, pixels: bool = False
) -> None:
    """Refuse tensors that cannot be a labelled sample set.

    ``x`` is floating (``uint8`` when ``pixels``) with samples along dim 0; ``y`` holds
    one int64 class index per sample, in ``[0, num_classes)`` when ``num_classes`` is
    given.

    Raises
    ------
    DataInvalid
    """
    if pixels:
        if not isinstance(x, torch.Tensor) or x.dtype != torch.uint8 or x.dim() < 2:
            raise DataInvalid("x must be a uint8 tensor of pixels (samples, ...)")
    elif not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() < 2:
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
