"""FedAdam: the server optimiser's steps by hand, and its state across a restart."""

from __future__ import annotations

import math

import torch

from peertrain.ml.aggregation import FedAdam, make_strategy


def _round(strategy, state, delta):
    acc = strategy.begin_round(state)
    acc.add({"w": torch.tensor(delta)}, 1.0, key="p")
    return acc.finish()


def test_two_steps_by_hand():
    lr, b1, b2, tau = 0.1, 0.9, 0.99, 1e-3
    strategy = FedAdam(server_lr=lr, beta1=b1, beta2=b2, tau=tau)
    state = {"w": torch.tensor([1.0, -1.0], dtype=torch.float64)}
    m = [0.0, 0.0]
    v = [0.0, 0.0]
    w = [1.0, -1.0]
    for delta in ([0.5, -0.25], [0.1, 0.3]):
        state = _round(strategy, state, delta)
        for i, d in enumerate(delta):
            m[i] = b1 * m[i] + (1 - b1) * d
            v[i] = b2 * v[i] + (1 - b2) * d * d
            w[i] = w[i] + lr * m[i] / (math.sqrt(v[i]) + tau)
        assert torch.allclose(state["w"], torch.tensor(w, dtype=torch.float64), rtol=1e-12)
    assert strategy.step == 2


def test_state_persisted_as_safetensors_resumes_identically():
    deltas = [[0.5, -0.25, 0.0], [0.1, 0.3, -0.2], [-0.4, 0.05, 0.01], [0.2, 0.2, 0.2]]
    start = {"w": torch.tensor([1.0, 2.0, 3.0])}
    steady = make_strategy({"strategy": "fedadam", "server_lr": 0.05})
    state = start
    for d in deltas:
        state = _round(steady, state, d)

    first = make_strategy({"strategy": "fedadam", "server_lr": 0.05})
    resumed_state = start
    for d in deltas[:2]:
        resumed_state = _round(first, resumed_state, d)
    saved = first.state_bytes()
    second = make_strategy({"strategy": "fedadam", "server_lr": 0.05})
    second.load_state_bytes(saved)
    for d in deltas[2:]:
        resumed_state = _round(second, resumed_state, d)
    assert torch.equal(state["w"], resumed_state["w"])
    assert second.step == 4
