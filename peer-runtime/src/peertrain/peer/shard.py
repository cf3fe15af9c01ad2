"""Reading a shard: an uncompressed ``.npz`` with float ``X`` and integer ``y``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .errors import ShardInvalid

__all__ = ["load_shard"]


def load_shard(path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """``X`` as float32 and ``y`` as int64 tensors (never unpickles anything).

    Raises
    ------
    ShardInvalid
        Not an ``.npz``, an object array, a missing member or a wrong dtype or shape.
    """
    try:
        with np.load(path, allow_pickle=False) as npz:
            names = set(npz.files)
            if not {"X", "y"} <= names:
                raise ShardInvalid(f"shard has members {sorted(names)[:10]}, needs X and y")
            x, y = npz["X"], npz["y"]
    except ShardInvalid:
        raise
    except Exception as exc:  # not a zip, a pickled (object) array, a truncated member
        raise ShardInvalid(f"shard is not a valid npz: {exc}") from exc
    if x.dtype.kind != "f" or x.ndim < 2:
        raise ShardInvalid(f"X must be floating with samples along axis 0, got {x.dtype}{x.shape}")
    if y.dtype.kind not in "iu" or y.ndim != 1:
        raise ShardInvalid(f"y must be 1-D integer class indices, got {y.dtype}{y.shape}")
    if x.shape[0] != y.shape[0]:
        raise ShardInvalid(f"X has {x.shape[0]} samples, y {y.shape[0]}")
    xs = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    ys = torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64))
    return xs, ys
