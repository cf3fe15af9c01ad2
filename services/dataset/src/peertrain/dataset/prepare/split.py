"""Writing encoded rows out as the training part (``.npy``) and the holdout (``.npz``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import DTypeLike, NDArray

from .npyio import NpyWriter, NpzWriter

__all__ = ["SplitFiles", "write_split"]

SplitFiles = tuple[Path, Path, Path]


def write_split(
    blocks: Iterable[NDArray[Any]],
    labels: NDArray[np.integer],
    holdout: NDArray[np.bool_],
    sample_shape: tuple[int, ...],
    scratch: Path,
    dtype: DTypeLike = np.float32,
) -> SplitFiles:
    """Route consecutive row blocks to the training part or the holdout.

    Parameters
    ----------
    blocks
        Rows in file order, each ``(b, *sample_shape)``, of ``dtype``.
    labels
        Class index of every row.
    holdout
        Which rows are held out.
    sample_shape
        Shape of one sample.
    scratch
        Where to write ``train-x.npy``, ``train-y.npy`` and ``holdout.npz``.
    dtype
        ``X``'s element type: ``float32`` (encoded values) or ``uint8`` (pixels).
    """
    train_x = scratch / "train-x.npy"
    train_y = scratch / "train-y.npy"
    holdout_path = scratch / "holdout.npz"
    n_train = int((~holdout).sum())
    n_holdout = int(holdout.sum())
    start = 0
    with (
        train_x.open("wb") as out,
        NpzWriter(holdout_path, n_holdout, sample_shape, dtype) as held,
    ):
        writer = NpyWriter(out, (n_train, *sample_shape), dtype)
        for block in blocks:
            stop = start + len(block)
            keep = holdout[start:stop]
            writer.append(block[~keep])
            if keep.any():
                held.append(block[keep], labels[start:stop][keep])
            start = stop
        writer.check_complete()
    if start != len(labels):
        raise ValueError(f"{start} rows encoded, {len(labels)} labelled")
    np.save(train_y, labels[~holdout].astype(np.int32), allow_pickle=False)
    return train_x, train_y, holdout_path
