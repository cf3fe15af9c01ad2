"""Where CUDA is present: same bits as the CPU for aggregation, seeded training."""

from __future__ import annotations

import pytest
import torch

from peertrain.ml.aggregation import FedAdam, FedAvg
from peertrain.ml.training import evaluate, train_local
from peertrain.ml.zoo import build_model

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.parametrize("strategy", [FedAvg, FedAdam])
def test_cuda_accumulation_gives_the_cpu_bits(global_state, updates, strategy):
    results = []
    for device in ("cpu", "cuda"):
        acc = strategy(device=device).begin_round(global_state, reference_weight=6.0)
        for i in (3, 1, 5, 0, 4, 2):
            acc.add({k: v.to(device) for k, v in updates[i].items()}, 1.0 + i, key=str(i))
        results.append(acc.finish())
    assert all(torch.equal(results[0][k], results[1][k].cpu()) for k in global_state)


def test_training_on_cuda_is_seeded():
    features = {"image_shape": [1, 8, 8], "num_classes": 3}
    spec = {"arch": "cnn", "channels": [4, 8], "hidden": 16, "dropout": 0.2}
    gen = torch.Generator().manual_seed(0)
    x, y = torch.rand(96, 1, 8, 8, generator=gen), torch.randint(0, 3, (96,), generator=gen)
    deltas = []
    for _ in range(2):
        model = build_model(spec, features, seed=1)
        result = train_local(model, x, y, {"local_epochs": 2, "batch_size": 16}, device="cuda")
        assert next(model.parameters()).is_cuda
        deltas.append(result.delta)
    assert all(torch.equal(deltas[0][k], deltas[1][k]) for k in deltas[0])
    assert evaluate(model, x, y)["samples"] == 96
