"""Stateful layers: BatchNorm buffers aggregate plainly in every strategy, FedBN's rule."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from peertrain.ml.aggregation import STRATEGIES, make_strategy
from peertrain.ml.weights import (
    batch_norm_names,
    buffer_names,
    compute_delta,
    keep_local_layers,
    l2_norm,
    use_local_layers,
    validate_update,
)


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3)
        self.bn = nn.BatchNorm2d(3)
        self.fc = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.bn(self.conv(x)).mean((2, 3)))


BUFFERS = frozenset({"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"})
WEIGHTS = [30.0, 50.0, 20.0]


def _global() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {k: v.clone() for k, v in _Net().state_dict().items()}


def _peers(global_state: dict[str, torch.Tensor]) -> list[dict[str, torch.Tensor]]:
    """Each peer's state after "training": its own running stats and batch counts."""
    gen = torch.Generator().manual_seed(1)
    peers = []
    for k in range(len(WEIGHTS)):
        state = {
            name: (t + 0.1 * torch.randn(t.shape, generator=gen)) if t.is_floating_point() else t
            for name, t in global_state.items()
        }
        state["bn.num_batches_tracked"] = global_state["bn.num_batches_tracked"] + 3 + 2 * k
        peers.append(state)
    return peers


def _aggregate(name: str, **block: object) -> tuple[dict, list[dict], dict]:
    g = _global()
    peers = _peers(g)
    strategy = make_strategy({"strategy": name, **block}, buffers=BUFFERS)
    acc = strategy.begin_round(g, reference_weight=sum(WEIGHTS))
    for k, (state, w) in enumerate(zip(peers, WEIGHTS, strict=True)):
        acc.add(compute_delta(state, g), w, key=str(k))
    return g, peers, acc.finish()


def _weighted_mean(peers: list[dict], name: str) -> torch.Tensor:
    total = sum(WEIGHTS)
    mean = sum(p[name].to(torch.float64) * w for p, w in zip(peers, WEIGHTS, strict=True))
    return mean / total


def test_the_models_buffers_and_batch_norm_layers_are_found_by_type() -> None:
    net = _Net()
    assert buffer_names(net) == BUFFERS
    assert batch_norm_names(net) == BUFFERS | {"bn.weight", "bn.bias"}
    with torch.device("meta"):  # the aggregator's way: no memory, same names
        assert buffer_names(_Net()) == BUFFERS


@pytest.mark.parametrize("strategy", ["fedavg", "fedprox", "fedadam"])
def test_running_stats_are_the_weighted_mean_of_the_peers_whatever_the_server_step(
    strategy: str,
) -> None:
    _, peers, new = _aggregate(strategy, server_lr=0.5)
    for name in ("bn.running_mean", "bn.running_var"):
        torch.testing.assert_close(
            new[name], _weighted_mean(peers, name).to(torch.float32), rtol=0, atol=1e-6
        )
    # parameters do take the server's step: not the plain mean
    assert not torch.allclose(new["fc.weight"], _weighted_mean(peers, "fc.weight").float())


def test_fedadam_keeps_no_moments_for_buffers() -> None:
    g = _global()
    strategy = make_strategy({"strategy": "fedadam"}, buffers=BUFFERS)
    acc = strategy.begin_round(g, reference_weight=1.0)
    acc.add(compute_delta(_peers(g)[0], g), 1.0, key="a")
    acc.finish()
    state = strategy.state_dict()
    assert "m.fc.weight" in state and not any(k.endswith(tuple(BUFFERS)) for k in state)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_num_batches_tracked_stays_a_sane_int64_in_every_strategy(strategy: str) -> None:
    g, peers, new = _aggregate(strategy)
    count = new["bn.num_batches_tracked"]
    assert count.dtype == torch.int64 and count.shape == g["bn.num_batches_tracked"].shape
    counts = sorted(int(p["bn.num_batches_tracked"]) for p in peers)
    assert counts[0] <= int(count) <= counts[-1]
    if strategy in ("fedavg", "fedprox", "fedadam"):  # the rounded weighted mean
        assert int(count) == round(float(_weighted_mean(peers, "bn.num_batches_tracked")))


def test_a_counter_never_goes_negative_nor_breaks_the_exact_sum() -> None:
    g = _global()
    strategy = make_strategy({"strategy": "fedavg", "max_update_norm": 10.0}, buffers=BUFFERS)
    acc = strategy.begin_round(g, reference_weight=2.0)
    for k, count in enumerate((-(2**40), 2**40)):
        delta = {n: torch.zeros_like(t) for n, t in g.items()}
        delta["bn.num_batches_tracked"] = torch.tensor(count)
        acc.add(delta, 1.0, key=str(k))
    assert int(acc.finish()["bn.num_batches_tracked"]) == 5  # (0 + 10) / 2: each capped


def test_the_norm_counts_running_stats_but_not_counters_and_non_finite_stats_are_refused() -> None:
    g = _global()
    delta = {n: torch.zeros_like(t) for n, t in g.items()}
    delta["bn.num_batches_tracked"] = torch.tensor(10_000)
    assert l2_norm(delta) == 0.0
    assert validate_update(delta, g, max_norm=1.0) == []
    delta["bn.running_var"] = torch.full((3,), 4.0)
    assert l2_norm(delta) == pytest.approx(48**0.5)
    delta["bn.running_var"][0] = float("nan")
    assert any("non-finite" in p for p in validate_update(delta, g, max_norm=1e9))


def test_fedbn_trains_with_the_peers_own_layers_and_sends_a_delta_of_the_received_version() -> None:
    model = _Net()
    received = {k: v.clone() for k, v in model.state_dict().items()}
    mine = {k: v + 1 if v.is_floating_point() else v + 7 for k, v in received.items()}
    bn = batch_norm_names(model)
    got = use_local_layers(model, {k: mine[k] for k in bn})
    assert set(got) == bn and all(torch.equal(got[k], received[k]) for k in bn)
    assert all(torch.equal(model.state_dict()[k], mine[k]) for k in bn)
    # "training": one forward in train mode moves the running stats on
    start = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()
    model(torch.randn(4, 1, 5, 5))
    delta = compute_delta(model.state_dict(), start)
    sent, kept = keep_local_layers(model, delta, got)
    now = model.state_dict()
    for k in bn:
        assert torch.equal(kept[k], now[k])
        assert torch.equal(received[k] + sent[k], now[k])  # relative to the received version
    assert torch.equal(sent["fc.weight"], delta["fc.weight"])
    assert int(kept["bn.num_batches_tracked"]) == 8
    with pytest.raises(ValueError):
        use_local_layers(model, {"bn.weight": kept["bn.weight"]})
