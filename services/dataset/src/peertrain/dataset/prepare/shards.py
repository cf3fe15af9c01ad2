"""Writing one ``npz-v1`` file per shard from the encoded training part.

The training ``X`` is read once, a block of rows at a time, and every row goes to the
file of the shard it was assigned to (rows keep their file order within a shard). At
most :data:`MAX_OPEN` shard files are open at once; more shards take more passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from .npyio import NpyBlockReader, NpzWriter

__all__ = ["MAX_OPEN", "ShardFile", "job_prefix", "shard_key", "write_shards"]


def job_prefix(job_id: str) -> str:
    """A job's objects live under ``jobs/<job_id>/``."""
    return f"jobs/{job_id}/"


def shard_key(job_id: str, index: int) -> str:
    """Where shard ``index`` of a job is stored (the simulation keeps the same layout)."""
    return f"{job_prefix(job_id)}shards/{index}.npz"


MAX_OPEN = 64
_BLOCK_BYTES = 16 * 1024 * 1024
_HIST_CHUNK = 1 << 20


@dataclass(frozen=True)
class ShardFile:
    """One written shard: its file, rows and class histogram."""

    index: int
    path: Path
    rows: int
    class_counts: tuple[int, ...]


def write_shards(
    train_x: Path,
    labels: NDArray[np.integer],
    assignment: NDArray[np.int32],
    n_shards: int,
    num_classes: int,
    out_dir: Path,
) -> list[ShardFile]:
    """Write each shard's rows of ``train_x`` (with their labels) to ``<out_dir>/<k>.npz``.

    Parameters
    ----------
    train_x
        The training part (``.npy``, one row per sample: float32 encoded values, or
        uint8 pixels), copied to the shards in its own dtype.
    labels
        The class index of every training row.
    assignment
        The shard of every training row.
    n_shards
        How many shards.
    num_classes
        For the histograms.
    out_dir
        Where the shard files go.
    """
    sizes = np.bincount(assignment, minlength=n_shards)
    written: list[ShardFile] = []
    for first in range(0, n_shards, MAX_OPEN):
        group = range(first, min(first + MAX_OPEN, n_shards))
        written.extend(_write_group(train_x, labels, assignment, sizes, group, out_dir))
    counts = np.zeros(n_shards * num_classes, dtype=np.int64)
    for start in range(0, len(labels), _HIST_CHUNK):
        cell = assignment[start : start + _HIST_CHUNK].astype(np.int64) * num_classes
        cell += labels[start : start + _HIST_CHUNK]
        counts += np.bincount(cell, minlength=n_shards * num_classes)
    histograms = counts.reshape(n_shards, num_classes)
    return [
        ShardFile(w.index, w.path, w.rows, tuple(int(c) for c in histograms[w.index]))
        for w in written
    ]


def _write_group(
    train_x: Path,
    labels: NDArray[np.integer],
    assign: NDArray[np.int32],
    sizes: NDArray[np.int64],
    group: range,
    out_dir: Path,
) -> list[ShardFile]:
    with NpyBlockReader(train_x) as reader:
        if reader.shape[0] != len(labels):
            raise ValueError(f"X has {reader.shape[0]} rows, y has {len(labels)}")
        sample_shape = reader.shape[1:]
        row_bytes = max(1, int(np.prod(sample_shape)) * reader.dtype.itemsize)
        block_rows = max(1, _BLOCK_BYTES // row_bytes)
        writers = {
            k: NpzWriter(out_dir / f"{k}.npz", int(sizes[k]), sample_shape, reader.dtype)
            for k in group
        }
        try:
            start = 0
            while start < len(labels):
                block = reader.read(block_rows)
                stop = start + len(block)
                owners = assign[start:stop]
                block_labels = labels[start:stop]
                for k in np.unique(owners):
                    if int(k) in writers:
                        mine = owners == k
                        writers[int(k)].append(block[mine], block_labels[mine])
                start = stop
            for writer in writers.values():
                writer.close()
        except BaseException:
            for writer in writers.values():
                writer.abort()
            raise
    return [ShardFile(k, out_dir / f"{k}.npz", int(sizes[k]), ()) for k in group]
