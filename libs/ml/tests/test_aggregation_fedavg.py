"""FedAvg / FedProx: hand-computed values, order independence, duplicates, resume."""

from __future__ import annotations

import itertools
import math
import random
from typing import get_args

import pytest
import torch

import peertrain.ml.aggregation.kernels as kernels
from peertrain.common.specs import (
    AGGREGATION_STRATEGIES,
    AggregationName,
    SpecInvalid,
    TrainingParams,
)
from peertrain.ml.aggregation import (
    MAX_WEIGHT_RATIO,
    STRATEGIES,
    ExactSum,
    FedAdam,
    FedAvg,
    FedProx,
    Median,
    TrimmedMean,
    fold_exact,
    make_strategy,
    numba_available,
    parse_aggregation_spec,
)
from peertrain.ml.errors import AggregationError

WEIGHTS = [120.0, 80.0, 200.0, 33.0, 1.0, 66.0]


def _fold(strategy, global_state, updates, order, reference_weight=500.0, dupes=()):
    acc = strategy.begin_round(global_state, reference_weight=reference_weight)
    for i in order:
        assert acc.add(updates[i], WEIGHTS[i], key=f"peer-{i}")
    for i in dupes:
        assert acc.add(updates[i], WEIGHTS[i], key=f"peer-{i}") is False
    return acc.finish()


def _same(a, b):
    return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)


def test_fedavg_matches_the_hand_computed_weighted_mean():
    g = {"w": torch.tensor([1.0, 2.0, -3.0])}
    ups = [{"w": torch.tensor([0.5, 0.0, 1.0])}, {"w": torch.tensor([-1.0, 3.0, 1.0])}]
    acc = FedAvg().begin_round(g, reference_weight=4.0)
    acc.add(ups[0], 3, key="a")
    acc.add(ups[1], 1, key="b")
    # mean = (3 * u0 + 1 * u1) / 4 = [0.125, 0.75, 1.0]
    assert torch.equal(acc.finish()["w"], torch.tensor([1.125, 2.75, -2.0]))


def test_server_lr_scales_the_step():
    g = {"w": torch.zeros(2)}
    acc = FedAvg(server_lr=0.5).begin_round(g)
    acc.add({"w": torch.tensor([1.0, -2.0])}, 1.0)
    assert torch.equal(acc.finish()["w"], torch.tensor([0.5, -1.0]))


def test_result_is_close_to_the_exact_weighted_mean(global_state, updates):
    new = _fold(FedAvg(), global_state, updates, range(6))
    total = math.fsum(WEIGHTS)
    for name, g in global_state.items():
        ref = sum(u[name].double() * w for u, w in zip(updates, WEIGHTS, strict=True)) / total
        assert torch.allclose(new[name].double(), g.double() + ref, rtol=0, atol=1e-6)


def test_any_arrival_order_and_duplicates_give_identical_bits(global_state, updates):
    reference = _fold(FedAvg(), global_state, updates, range(6))
    rng = random.Random(5)
    orders = [list(p) for p in itertools.islice(itertools.permutations(range(6)), 0, 720, 97)]
    orders += [rng.sample(range(6), 6) for _ in range(5)]
    for order in orders:
        assert _same(reference, _fold(FedAvg(), global_state, updates, order, dupes=order[:3]))


def test_a_plain_float32_running_sum_would_depend_on_order(updates):
    """The control: why the exact accumulator exists."""
    sums = set()
    for order in itertools.permutations(range(6)):
        acc = torch.zeros_like(updates[0]["a.weight"])
        for i in order:
            acc += updates[i]["a.weight"] * WEIGHTS[i]
        sums.add(acc.numpy().tobytes())
    assert len(sums) > 1


def test_numba_and_torch_kernels_agree_bit_for_bit(monkeypatch):
    if not numba_available():
        pytest.skip("numba is not installed")
    gen = torch.Generator().manual_seed(1)
    u = torch.randn(3_000_001, generator=gen) * torch.logspace(-12, 3, 3_000_001)
    a, b = torch.zeros(u.numel(), dtype=torch.float64), torch.zeros(u.numel(), dtype=torch.float64)
    fold_exact(a, u, 2.0**40 / 3)
    monkeypatch.setattr(kernels, "_numba_kernel", lambda: None)
    fold_exact(b, u, 2.0**40 / 3)
    assert torch.equal(a, b)


def test_numpy_and_torch_kernels_agree_bit_for_bit(monkeypatch):
    monkeypatch.setattr(kernels, "_numba_kernel", lambda: None)
    gen = torch.Generator().manual_seed(2)
    for dtype in (torch.float32, torch.float64, torch.float16):
        u = (torch.randn(300_007, generator=gen) * torch.logspace(-8, 3, 300_007)).to(dtype)
        a = torch.full((u.numel(),), 7.0, dtype=torch.float64)
        b = a.clone()
        fold_exact(a, u, 2.0**40 / 3)  # the CPU kernel: numpy, numba disabled
        kernels._fold_torch(b, u, 2.0**40 / 3)
        assert torch.equal(a, b)


def test_checkpoint_and_resume_give_the_same_bits(global_state, updates):
    reference = _fold(FedAvg(), global_state, updates, range(6))
    strategy = FedAvg()
    acc = strategy.begin_round(global_state, reference_weight=500.0)
    for i in (4, 0, 2):
        acc.add(updates[i], WEIGHTS[i], key=f"peer-{i}")
    resumed = strategy.resume_round(global_state, acc.checkpoint())
    assert resumed.keys == ("peer-0", "peer-2", "peer-4")
    assert resumed.add(updates[0], WEIGHTS[0], key="peer-0") is False
    for i in (5, 1, 3):
        resumed.add(updates[i], WEIGHTS[i], key=f"peer-{i}")
    assert _same(reference, resumed.finish())


def test_fedprox_is_fedavg_on_the_server(global_state, updates):
    prox = make_strategy({"strategy": "fedprox"}, training={"proximal_mu": 0.1})
    assert isinstance(prox, FedProx) and prox.proximal_mu == 0.1
    assert _same(
        _fold(FedAvg(), global_state, updates, range(6)),
        _fold(prox, global_state, updates, [3, 1, 5, 0, 2, 4]),
    )


def test_misuse_is_refused(global_state, updates):
    acc = FedAvg().begin_round(global_state)
    with pytest.raises(AggregationError, match="no update"):
        acc.finish()
    acc = FedAvg().begin_round(global_state, reference_weight=1.0)
    with pytest.raises(AggregationError, match="reference weight"):
        acc.add(updates[0], MAX_WEIGHT_RATIO + 1)
    with pytest.raises(AggregationError, match="non-negative"):
        acc.add(updates[0], -1.0)
    with pytest.raises(AggregationError, match="shape"):
        acc.add(updates[0] | {"a.bias": torch.zeros(8)}, 1.0)
    acc.add(updates[0], 1.0)
    acc.finish()
    with pytest.raises(AggregationError, match="finished"):
        acc.add(updates[1], 1.0)


def test_an_update_beyond_the_bound_is_detected(global_state):
    acc = FedAvg(update_bound=1.0).begin_round(global_state)
    acc.add({k: torch.full_like(v, 1e20) for k, v in global_state.items()}, 1.0)
    with pytest.raises(AggregationError, match="exceeded the bound"):
        acc.finish()


def test_exact_sum_grid_follows_the_bound():
    small, large = ExactSum({"w": (1,)}, bound=1.0), ExactSum({"w": (1,)}, bound=1e4)
    assert small.exponent < large.exponent <= -25


def test_aggregation_spec_is_validated():
    with pytest.raises(SpecInvalid) as info:
        make_strategy({"strategy": "krum"})
    assert info.value.detail[0]["loc"] == "strategy"
    with pytest.raises(SpecInvalid):
        make_strategy({"strategy": "trimmed_mean", "trim_fraction": 0.5})
    assert make_strategy({}).name == "fedavg"


def test_every_declared_name_is_built_by_its_registered_class():
    assert tuple(STRATEGIES) == AGGREGATION_STRATEGIES == get_args(AggregationName)
    for name, cls in STRATEGIES.items():
        made = make_strategy({"strategy": name, "server_lr": 0.5})
        assert type(made) is cls and made.name == name and made.server_lr == 0.5


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({"strategy": "fedavg"}, FedAvg(server_lr=1.0, update_bound=100.0)),
        ({"strategy": "fedavg", "max_update_norm": 7.0}, FedAvg(update_bound=7.0)),
        ({"strategy": "fedprox"}, FedProx(proximal_mu=0.0)),
        ({"strategy": "fedadam"}, FedAdam(server_lr=0.1)),
        (
            {"strategy": "fedadam", "server_lr": 0.3, "beta1": 0.5, "beta2": 0.6, "tau": 0.2},
            FedAdam(server_lr=0.3, beta1=0.5, beta2=0.6, tau=0.2),
        ),
        ({"strategy": "trimmed_mean", "trim_fraction": 0.2}, TrimmedMean(trim_fraction=0.2)),
        ({"strategy": "median", "server_lr": 2.0}, Median(server_lr=2.0)),
    ],
)
def test_from_spec_configures_as_the_block_says(block, expected):
    made = make_strategy(block)
    assert type(made) is type(expected) and vars(made) == vars(expected)


def test_statefulness_is_declared():
    assert {name for name, cls in STRATEGIES.items() if cls.stateful} == {"fedadam"}


def test_fedprox_reads_proximal_mu_from_the_training_block():
    training = TrainingParams(lr=0.1, proximal_mu=0.25)
    prox = parse_aggregation_spec({"strategy": "fedprox"})
    assert TrainingParams(lr=0.1).proximal_mu == 0.0
    assert make_strategy(prox, training=training).proximal_mu == 0.25
    assert make_strategy(prox, training={"proximal_mu": 0.25}).proximal_mu == 0.25
