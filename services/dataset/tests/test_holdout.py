"""The stratified holdout split."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peertrain.dataset.domain.errors import TooFewRows
from peertrain.dataset.domain.holdout import holdout_counts, holdout_seed, stratified_holdout


def test_counts_are_proportional_and_sum_to_the_fraction() -> None:
    counts = holdout_counts(np.array([500, 300, 200]), 0.1)
    assert counts.tolist() == [50, 30, 20]


def test_every_class_keeps_a_training_row() -> None:
    counts = holdout_counts(np.array([1, 1, 2, 100]), 0.5)
    assert counts[0] == 0 and counts[1] == 0 and counts[2] <= 1


def test_a_holdout_needs_a_spare_row() -> None:
    with pytest.raises(TooFewRows):
        holdout_counts(np.array([1, 1]), 0.1)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 5), min_size=2, max_size=400),
    st.floats(0.01, 0.5),
    st.integers(0, 2**40),
)
def test_holdout_is_stratified_and_deterministic(
    raw: list[int], fraction: float, seed: int
) -> None:
    labels = np.array(raw)
    _, labels = np.unique(labels, return_inverse=True)
    classes = int(labels.max()) + 1
    counts = np.bincount(labels, minlength=classes)
    if (counts - 1).clip(min=0).sum() == 0:
        with pytest.raises(TooFewRows):
            stratified_holdout(labels, classes, fraction, seed)
        return
    mask = stratified_holdout(labels, classes, fraction, seed)
    assert np.array_equal(mask, stratified_holdout(labels, classes, fraction, seed))
    assert mask.sum() >= 1
    held = np.bincount(labels[mask], minlength=classes)
    train = np.bincount(labels[~mask], minlength=classes)
    assert np.all(train >= 1)  # no class disappears from training
    assert np.array_equal(held, holdout_counts(counts, fraction))
    target = fraction * len(labels)
    assert mask.sum() <= max(1, round(target))


def test_seed_is_stable_per_dataset() -> None:
    assert holdout_seed("abc") == holdout_seed("abc") != holdout_seed("abd")
    assert 0 <= holdout_seed("abc") < 2**63
