"""Final weights pinned to the bit: a speed-up of the training or the simulation must not
move a single bit of what peers and the simulation produce.

float32 results differ by the kernels a host's torch picks (MKL's code path for the CPU,
ATen's vector width), so the digests are kept per kernel family. `kernel_canary` names
the family: a few steps of plain torch training (the layers, losses and optimizers that
peers use) whose digest moves exactly when those kernels do. Every family below was taken
with the code of main 889ec68 (before the anchor task's speed-up) and current main agreed
on it. On a host whose canary is not listed the test skips and says the canary; retake
the digests there from 889ec68 (`git worktree add /tmp/ref 889ec68`, the same calls with
its code on PYTHONPATH) and add a row.

The first pins (commit 303f6fc) were taken on an AVX512 host whose canary was not
recorded, so they could not be given a row.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import cache

import numpy as np
import pytest
import torch

import peertrain.sim as sim
from peertrain.ml.training import train_local
from peertrain.ml.zoo import build_model

from .conftest import SPEC


def digest(state: Mapping[str, torch.Tensor]) -> str:
    """sha256 over names and raw bytes, in name order (first 16 hex digits)."""
    h = hashlib.sha256()
    for name in sorted(state):
        h.update(name.encode())
        h.update(state[name].detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


@cache
def kernel_canary() -> str:
    """Digest of a tiny plain-torch training run: it names this host's float kernels."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(
        nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3)
    )
    x = torch.randn(64, 6, generator=g) * 3
    y = torch.randint(0, 3, (64,), generator=g)
    optimizers = (
        torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01),
        torch.optim.Adam(model.parameters(), lr=0.01),
    )
    for opt in optimizers:
        for size in (16, 10, 7):
            for start in range(0, 64, size):
                opt.zero_grad()
                logits = model(x[start : start + size])
                torch.nn.functional.cross_entropy(logits, y[start : start + size]).backward()
                opt.step()
    return digest(model.state_dict())


# kernel canary -> digest of each pinned result, all taken with main 889ec68's code.
PINS: dict[str, dict[str, str]] = {
    # x86_64 with AMX (Sapphire Rapids class), torch 2.15, MKL on its AVX512 path
    "8056ecfd75056cce": {
        "dropout_adam_two_epochs": "a34df99c2781d09a",
        "fedadam_dirichlet": "53c9ac4e9f82445f",
        "fedavg_sgd": "025e92d16ff4dcd3",
        "fedprox_momentum_weight_decay": "e8513006498afe53",
        "sampled": "f253429dbb6ab894",
        "init": "7f1fb85c74181e84",
        "sgd": "350e17c0ec4a6f37",
        "adam": "385147d27ff431af",
    },
    # the same host with MKL held to AVX2 (MKL_ENABLE_INSTRUCTIONS=AVX2), torch 2.15
    "c126c92e972ba5fb": {
        "dropout_adam_two_epochs": "473b81e4c52593f6",
        "fedadam_dirichlet": "a1c4fcda3e32ae22",
        "fedavg_sgd": "5ecce263f546460e",
        "fedprox_momentum_weight_decay": "cfe3d5b0e30d1535",
        "sampled": "77a4ff4161170a87",
        "init": "7f1fb85c74181e84",
        "sgd": "41b4fd67afbd74f8",
        "adam": "e0f5756c1b51a066",
    },
    # AMD EPYC with AVX512 (and AVX512-BF16, no AMX), torch 2.15, ATen's AVX512 path;
    # main 889ec68 and 21bc6f9 agreed on every digest (2026-12-03)
    "cda3460c1d779327": {
        "dropout_adam_two_epochs": "e962e3032a7d2b98",
        "fedadam_dirichlet": "15a437cc66738f33",
        "fedavg_sgd": "73d3fabfa2473508",
        "fedprox_momentum_weight_decay": "6a4b44fc26a4a128",
        "sampled": "8f3443f3f376707d",
        "init": "7f1fb85c74181e84",
        "sgd": "74e7557a6fe0f9e1",
        "adam": "931000cc422d43a6",
    },
}


@pytest.fixture(scope="module")
def pins() -> dict[str, str]:
    canary = kernel_canary()
    if canary not in PINS:
        pytest.skip(f"no pins for this host's float kernels (canary {canary}); see the docstring")
    return PINS[canary]


JOBS = {
    "fedavg_sgd": SPEC,
    "dropout_adam_two_epochs": {
        **SPEC,
        "model": {"arch": "mlp", "hidden": [16, 8], "dropout": 0.3},
        "training": {**SPEC["training"], "optimizer": "adam", "local_epochs": 2},
    },
    "fedprox_momentum_weight_decay": {
        **SPEC,
        "training": {
            **SPEC["training"],
            "momentum": 0.9,
            "weight_decay": 0.01,
            "proximal_mu": 0.1,
        },
        "aggregation": {"strategy": "fedprox"},
    },
    "fedadam_dirichlet": {
        **SPEC,
        "aggregation": {"strategy": "fedadam"},
        "sharding": {"strategy": "dirichlet", "alpha": 0.3},
    },
}


@pytest.mark.parametrize("name", sorted(JOBS))
def test_a_small_jobs_final_weights_keep_their_pinned_bits(small_data, pins, name) -> None:
    result = sim.run(JOBS[name], small_data, peers=4, device="cpu")
    assert result.state == "completed", result.error
    assert digest(result.state_dict) == pins[name]


def test_sampled_peers_final_weights_keep_their_pinned_bits(small_data, pins) -> None:
    spec = {**SPEC, "training": {**SPEC["training"], "rounds": 4}}
    result = sim.run(spec, small_data, peers=6, peers_per_round=3, device="cpu")
    assert result.state == "completed", result.error
    assert digest(result.state_dict) == pins["sampled"]


def test_local_training_keeps_its_pinned_bits(small_data, pins) -> None:
    features = {"input_size": 6, "num_classes": 3}
    model_spec = {"arch": "mlp", "hidden": [16], "dropout": 0.2}
    assert digest(build_model(model_spec, features, seed=5).state_dict()) == pins["init"]
    x = torch.from_numpy(np.asarray(small_data.train_x, dtype=np.float32))
    y = torch.from_numpy(np.asarray(small_data.train_y, dtype=np.int64))
    for optimizer in ("sgd", "adam"):
        model = build_model(model_spec, features, seed=5)
        params = {
            "lr": 0.05,
            "batch_size": 10,
            "local_epochs": 2,
            "optimizer": optimizer,
            "momentum": 0.5 if optimizer == "sgd" else 0.0,
            "proximal_mu": 0.05,
            "seed": 1,
        }
        result = train_local(model, x, y, params, seed=9, device="cpu")
        assert digest(result.delta) == pins[optimizer], optimizer
