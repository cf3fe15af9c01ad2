"""Staleness weighting for asynchronous rounds."""

from __future__ import annotations

import math

import pytest

from peertrain.ml.aggregation.staleness import Staleness


def test_fresh_updates_count_fully_and_stale_ones_less() -> None:
    rule = Staleness(max_staleness=4)
    assert rule.factor(0) == 1.0
    assert math.isclose(rule.factor(3), 0.5)
    assert rule.weight(100, 3) == pytest.approx(50.0)
    assert [rule.admits(s) for s in (-1, 0, 4, 5)] == [False, True, True, False]
    with pytest.raises(ValueError):
        rule.factor(5)
    assert Staleness(exponent=0).factor(9) == 1.0
