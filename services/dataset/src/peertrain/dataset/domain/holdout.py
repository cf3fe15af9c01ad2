"""The holdout: a stratified part of the rows kept back for evaluating model versions."""

from __future__ import annotations

import hashlib

import numpy as np
from numpy.typing import NDArray

from peertrain.common import features

from .errors import TooFewRows

__all__ = ["MAX_HOLDOUT_SEED", "holdout_counts", "holdout_seed", "stratified_holdout"]


MAX_HOLDOUT_SEED = 2**63 - 1


def holdout_seed(dataset_id: str, chosen: int | None = None) -> int:
    """The holdout's seed: the uploader's choice (the same split for every upload of a
    file), else a function of the dataset id (so a re-run splits alike)."""
    if chosen is not None:
        return chosen
    return int.from_bytes(hashlib.sha256(dataset_id.encode()).digest()[:8], "big") >> 1


def holdout_counts(class_counts: NDArray[np.integer], fraction: float) -> NDArray[np.int64]:
    """How many rows of each class go to the holdout (see
    :func:`peertrain.common.features.holdout_counts`).

    Raises
    ------
    TooFewRows
        If no row can be held out without emptying a class's training part.
    """
    try:
        return features.holdout_counts(class_counts, fraction)
    except features.NoHoldout as exc:
        rows = int(np.asarray(class_counts).sum())
        raise TooFewRows(str(exc), rows=rows) from None


def stratified_holdout(
    labels: NDArray[np.integer], num_classes: int, fraction: float, seed: int
) -> NDArray[np.bool_]:
    """A boolean mask of the holdout rows: per class, a seeded random choice (the rule of
    :func:`peertrain.common.features.stratified_holdout`, which a downloaded model's
    ``--holdout`` applies again).

    Raises
    ------
    TooFewRows
        If no row can be held out without emptying a class's training part.
    """
    try:
        return features.stratified_holdout(labels, num_classes, fraction, seed)
    except features.NoHoldout as exc:
        raise TooFewRows(str(exc), rows=len(labels)) from None
