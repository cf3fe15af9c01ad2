"""Cached update calibration (CA2FL): the step by hand, order independence, the cache
carried as server state, and the spec's limits."""

from __future__ import annotations

import itertools

import pytest
import torch

from peertrain.common.specs import SpecInvalid
from peertrain.common.specs.aggregation import CALIBRATED_STRATEGIES
from peertrain.ml.aggregation import Calibrated, make_strategy
from peertrain.ml.aggregation.calibrated import CALIBRATED
from peertrain.ml.errors import AggregationError

SPEC = {"mode": "async", "buffer_size": 2, "calibration": "cached", "server_lr": 0.5}


def _version(strategy, state, updates):
    """One buffered version of ``updates``: ``(key, shard, delta, weight)``."""
    acc = strategy.begin_round(state)
    for key, shard, delta, weight in updates:
        acc.add({"w": torch.tensor(delta)}, weight, key=key, group=shard)
    return acc.finish()


def test_steps_by_hand():
    strategy = make_strategy(SPEC)
    assert isinstance(strategy, Calibrated) and strategy.stateful
    state = {"w": torch.tensor([0.0, 0.0], dtype=torch.float64)}
    # Nothing cached: the buffer's plain weighted mean.
    state = _version(strategy, state, [("a", "0", [1.0, 0.0], 1.0), ("b", "1", [0.0, 3.0], 3.0)])
    assert state["w"].tolist() == pytest.approx([0.5 * 0.25, 0.5 * 2.25])
    # Cached: shard 0 (weight 1) [1, 0], shard 1 (weight 3) [0, 3]; mean h = [0.25, 2.25].
    # The buffer: shard 0 again ([3, 0], weight 1) and shard 2, new ([0, 1], weight 1):
    # step = h + ((3, 0) - (1, 0) + (0, 1) - h) / 2.
    h = torch.tensor([0.25, 2.25], dtype=torch.float64)
    step = h + (torch.tensor([2.0, 0.0]) + torch.tensor([0.0, 1.0]) - h) / 2
    before = state["w"].clone()
    state = _version(strategy, state, [("c", "0", [3.0, 0.0], 1.0), ("d", "2", [0.0, 1.0], 1.0)])
    assert torch.allclose(state["w"], before + 0.5 * step, rtol=1e-12)
    assert sorted(strategy.cache) == ["0", "1", "2"]
    assert strategy.cache["0"][1]["w"].tolist() == [3.0, 0.0]


def test_same_bits_in_any_order_and_after_a_restart():
    torch.manual_seed(0)
    start = {"w": torch.randn(64), "b": torch.randn(3)}
    buffers = [
        [
            (
                f"k{v}{i}",
                str((v + i) % 5),
                {n: torch.randn_like(t) for n, t in start.items()},
                float(1 + i),
            )
            for i in range(3)
        ]
        for v in range(4)
    ]

    def run(order, restart_at=None):
        strategy, state = make_strategy(SPEC), start
        for v, updates in enumerate(buffers):
            if v == restart_at:
                saved = strategy.state_bytes()
                strategy = make_strategy(SPEC)
                strategy.load_state_bytes(saved)
            acc = strategy.begin_round(state)
            for key, shard, delta, weight in order(updates):
                acc.add(delta, weight, key=key, group=shard)
            state = acc.finish()
        return state

    first = run(list)
    for perm in itertools.islice(itertools.permutations(range(3)), 1, None):
        again = run(lambda u, p=perm: [u[i] for i in p], restart_at=2)
        assert all(torch.equal(first[n], again[n]) for n in first)


def test_a_shard_twice_in_a_buffer_is_cached_as_their_weighted_mean():
    strategy = make_strategy(SPEC)
    state = {"w": torch.zeros(1)}
    _version(strategy, state, [("a", "0", [1.0], 1.0), ("b", "0", [4.0], 2.0)])
    weight, cached = strategy.cache["0"]
    assert weight == 3.0 and cached["w"].tolist() == [3.0]


def test_buffers_and_counters_keep_the_plain_mean():
    strategy = make_strategy(SPEC, buffers=["bn.running_mean", "bn.num_batches_tracked"])
    state = {
        "w": torch.zeros(1),
        "bn.running_mean": torch.zeros(1),
        "bn.num_batches_tracked": torch.tensor(0),
    }
    for key, shard, value in (("a", "0", 2.0), ("b", "1", 4.0)):
        acc = strategy.begin_round(state)
        update = {
            "w": torch.tensor([value]),
            "bn.running_mean": torch.tensor([value]),
            "bn.num_batches_tracked": torch.tensor(2),
        }
        acc.add(update, 1.0, key=key, group=shard)
        state = acc.finish()
    assert state["bn.running_mean"].tolist() == [6.0]  # 2 then 4, plainly
    assert int(state["bn.num_batches_tracked"]) == 4
    assert set(strategy.cache["1"][1]) == {"w"}


def test_an_update_without_its_shard_is_refused():
    acc = make_strategy(SPEC).begin_round({"w": torch.zeros(1)})
    with pytest.raises(AggregationError, match="group"):
        acc.add({"w": torch.ones(1)}, 1.0, key="a")


def test_fedadam_steps_on_the_calibrated_mean_and_keeps_its_moments():
    strategy = make_strategy({**SPEC, "strategy": "fedadam", "server_lr": 0.1})
    state = {"w": torch.zeros(2)}
    for v in range(3):
        state = _version(strategy, state, [(f"k{v}", str(v % 2), [1.0, -1.0], 1.0)])
    saved = strategy.state_bytes()
    again = make_strategy({**SPEC, "strategy": "fedadam", "server_lr": 0.1})
    again.load_state_bytes(saved)
    assert again.inner.step == 3 and sorted(again.cache) == ["0", "1"]


def test_the_spec_limits_calibration_to_async_mean_strategies():
    assert set(CALIBRATED) == CALIBRATED_STRATEGIES
    with pytest.raises(SpecInvalid):
        make_strategy({"calibration": "cached"})  # sync
    with pytest.raises(SpecInvalid):
        make_strategy({**SPEC, "strategy": "median"})
    assert not isinstance(make_strategy({**SPEC, "calibration": "none"}), Calibrated)
