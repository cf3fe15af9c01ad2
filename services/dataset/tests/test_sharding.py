"""Sharding strategies: properties that must hold for any labels, shard count and seed."""

from __future__ import annotations

from typing import get_args

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peertrain.common.specs import SHARDING_STRATEGIES, ShardingName, ShardingSpec
from peertrain.dataset.domain.errors import TooFewRows
from peertrain.dataset.domain.sharding import (
    STRATEGIES,
    DirichletStrategy,
    FixedStrategy,
    IidStrategy,
    ShardingStrategy,
    StratifiedStrategy,
    strategy_for,
)


@st.composite
def labelled(draw: st.DrawFn) -> tuple[np.ndarray, int]:
    """Labels (1..600 rows over 1..8 classes) and a shard count that fits."""
    classes = draw(st.integers(1, 8))
    labels = draw(st.lists(st.integers(0, classes - 1), min_size=1, max_size=600))
    shards = draw(st.integers(1, min(20, len(labels))))
    return np.array(labels, dtype=np.int32), shards


def strategies(seed: int, alpha: float = 0.5) -> list[ShardingStrategy]:
    return [
        IidStrategy(seed=seed),
        StratifiedStrategy(seed=seed),
        DirichletStrategy(alpha=alpha, seed=seed),
    ]


def assert_partition(shards: list[np.ndarray], rows: int, n: int) -> None:
    assert len(shards) == n
    everything = np.concatenate(shards)
    # Every row exactly once: nothing lost, nothing duplicated.
    assert len(everything) == rows
    assert np.array_equal(np.sort(everything), np.arange(rows))
    for shard in shards:
        assert len(shard) > 0
        assert np.all(np.diff(shard) > 0)  # ascending, no repeats


@settings(max_examples=150, deadline=None)
@given(labelled(), st.integers(0, 2**32), st.floats(0.01, 100))
def test_every_strategy_partitions_the_rows_exactly(
    case: tuple[np.ndarray, int], seed: int, alpha: float
) -> None:
    labels, n = case
    for strategy in strategies(seed, alpha):
        assert_partition(strategy.split(labels, n), len(labels), n)


@settings(max_examples=150, deadline=None)
@given(labelled(), st.integers(0, 2**32))
def test_stratified_keeps_each_class_within_one_row_of_its_share(
    case: tuple[np.ndarray, int], seed: int
) -> None:
    labels, n = case
    shards = StratifiedStrategy(seed=seed).split(labels, n)
    for c in np.unique(labels):
        share = np.sum(labels == c) / n
        for shard in shards:
            got = np.sum(labels[shard] == c)
            assert abs(got - share) < 1, (c, got, share)
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=100, deadline=None)
@given(labelled(), st.integers(0, 2**32), st.floats(0.01, 10))
def test_dirichlet_is_deterministic_per_seed(
    case: tuple[np.ndarray, int], seed: int, alpha: float
) -> None:
    labels, n = case
    first = DirichletStrategy(alpha=alpha, seed=seed).split(labels, n)
    again = DirichletStrategy(alpha=alpha, seed=seed).split(labels.copy(), n)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert all(len(s) > 0 for s in first)


@settings(max_examples=50, deadline=None)
@given(labelled(), st.integers(0, 2**32))
def test_every_strategy_is_deterministic_per_seed(case: tuple[np.ndarray, int], seed: int) -> None:
    labels, n = case
    for make in (IidStrategy, StratifiedStrategy):
        a, b = make(seed=seed).split(labels, n), make(seed=seed).split(labels, n)
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_seeds_change_the_split() -> None:
    labels = np.arange(1000) % 5
    for make in (IidStrategy, StratifiedStrategy, DirichletStrategy):
        a, b = make(seed=1).split(labels, 4), make(seed=2).split(labels, 4)
        assert not all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_small_alpha_skews_labels_and_large_alpha_does_not() -> None:
    labels = np.arange(10_000) % 10

    def skew(alpha: float) -> float:
        shards = DirichletStrategy(alpha=alpha, seed=3).split(labels, 10)
        # mean over shards of the share of the shard's most common class
        return float(np.mean([np.bincount(labels[s]).max() / len(s) for s in shards]))

    assert skew(0.05) > 0.6
    assert skew(1000) < 0.2


def test_iid_sizes_differ_by_at_most_one() -> None:
    shards = IidStrategy(seed=0).split(np.zeros(103, dtype=np.int32), 10)
    assert sorted({len(s) for s in shards}) == [10, 11]


def test_more_shards_than_rows_is_refused() -> None:
    for strategy in strategies(0):
        with pytest.raises(TooFewRows):
            strategy.split(np.array([0, 1, 0]), 4)


def test_strategy_for_follows_the_job_spec() -> None:
    chosen = strategy_for(ShardingSpec(strategy="dirichlet", alpha=0.3, seed=9))
    assert isinstance(chosen, DirichletStrategy)
    assert (chosen.alpha, chosen.seed) == (0.3, 9)
    assert isinstance(strategy_for(ShardingSpec(strategy="stratified")), StratifiedStrategy)
    assert isinstance(strategy_for(ShardingSpec()), IidStrategy)


def test_every_declared_name_has_one_registered_strategy() -> None:
    assert tuple(STRATEGIES) == SHARDING_STRATEGIES == get_args(ShardingName)
    for name, cls in STRATEGIES.items():
        made = cls.from_spec(ShardingSpec(strategy=name, seed=5))  # type: ignore[arg-type]
        assert type(made) is cls and made.name == name and made.seed == 5


def test_fixed_shards_are_the_rows_the_data_names() -> None:
    labels = np.array([0, 1, 0, 1, 0])
    fixed = FixedStrategy([np.array([4, 0]), np.array([1, 2, 3])])
    assert fixed.assign(labels, 2).tolist() == [0, 1, 1, 1, 0]
    assert [s.tolist() for s in fixed.split(labels, 2)] == [[0, 4], [1, 2, 3]]


def test_fixed_shards_must_match_the_peers_and_name_every_row() -> None:
    labels = np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="2 shards for 3 peers"):
        FixedStrategy([np.array([0, 1]), np.array([2, 3])]).assign(labels, 3)
    with pytest.raises(ValueError, match="1 rows are in no shard"):
        FixedStrategy([np.array([0, 1]), np.array([2])]).assign(labels, 2)
