"""The holdout rule: a stratified, seeded part of the rows kept back for evaluation.

The dataset service chooses the holdout with it; a downloaded model finds the same rows
again with it (the export records the fraction and the seed).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["NoHoldout", "holdout_counts", "stratified_holdout"]


class NoHoldout(ValueError):
    """No row can be held out without emptying a class's training part."""


def holdout_counts(class_counts: NDArray[np.integer], fraction: float) -> NDArray[np.int64]:
    """How many rows of each class go to the holdout.

    The total is ``round(fraction * rows)`` (at least one), shared among classes in
    proportion by largest remainder, while every class keeps at least one training row.

    Raises
    ------
    NoHoldout
        If no row can be held out without emptying a class's training part.
    """
    counts = np.asarray(class_counts, dtype=np.int64)
    if not 0 < fraction <= 0.5:
        raise ValueError(f"fraction must be in (0, 0.5], got {fraction}")
    capacity = np.maximum(counts - 1, 0)
    total = min(max(1, round(fraction * int(counts.sum()))), int(capacity.sum()))
    if total < 1:
        raise NoHoldout("too few rows to keep a holdout: every class needs a training row too")
    quota = counts * (total / counts.sum())
    chosen = np.minimum(np.floor(quota).astype(np.int64), capacity)
    remainder = quota - np.floor(quota)
    # Largest remainder first, ties to the lower class index; repeat while room is left.
    order = sorted(range(len(counts)), key=lambda c: (-remainder[c], c))
    while (left := total - int(chosen.sum())) > 0:
        progressed = False
        for c in order:
            if left == 0:
                break
            if chosen[c] < capacity[c]:
                chosen[c] += 1
                left -= 1
                progressed = True
        if not progressed:
            break
    result: NDArray[np.int64] = chosen
    return result


def stratified_holdout(
    labels: NDArray[np.integer], num_classes: int, fraction: float, seed: int
) -> NDArray[np.bool_]:
    """A boolean mask of the holdout rows: per class, a seeded random choice.

    Parameters
    ----------
    labels
        Class index of every row, in ``0 .. num_classes - 1``, in file order.
    num_classes
        How many classes.
    fraction
        The part of the rows to hold out, in (0, 0.5].
    seed
        Seeds the choice (the dataset service derives it from the dataset's id).
    """
    labels = np.asarray(labels)
    class_counts = np.bincount(labels, minlength=num_classes)
    wanted = holdout_counts(class_counts, fraction)
    rng = np.random.default_rng(seed)
    mask = np.zeros(len(labels), dtype=bool)
    for c in range(num_classes):
        if wanted[c] == 0:
            continue
        rows = np.flatnonzero(labels == c)  # one class at a time: memory O(class)
        mask[rows[rng.choice(len(rows), size=int(wanted[c]), replace=False)]] = True
    return mask
