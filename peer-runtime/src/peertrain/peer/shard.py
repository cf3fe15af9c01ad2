"""Reading a shard: an uncompressed ``.npz`` with ``X`` (floats, or uint8 pixels) and
integer ``y``."""

from __future__ import annotations

from pathlib import Path

import torch

from peertrain.ml.errors import DataInvalid
from peertrain.ml.training import read_samples

from .errors import ShardInvalid

__all__ = ["load_shard"]


def load_shard(path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """``X`` as float32 (uint8 for pixels) and ``y`` as int64 tensors (never unpickles
    anything).

    Raises
    ------
    ShardInvalid
        Not an ``.npz``, an object array, a missing member or a wrong dtype or shape.
    """
    try:
        return read_samples(path)
    except DataInvalid as exc:
        raise ShardInvalid(f"shard: {exc}") from exc
