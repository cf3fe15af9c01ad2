"""torch's global generator is one per process, and the platform builds models and
trains on worker threads (an aggregator makes several jobs' version 0 at once, beside
exports and evaluations): every seeded use of it holds it alone, or one job's seeding
draws another's numbers (a failover test saw two runs of one job start from
different version 0 weights)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import torch

from peertrain.ml.training import train_local
from peertrain.ml.zoo import build_model

SPEC = {"arch": "mlp", "hidden": [256, 256]}
FEATURES = {"input_size": 784, "num_classes": 10}
SEEDS = list(range(8))


def weights(seed: int) -> dict[str, torch.Tensor]:
    return build_model(SPEC, FEATURES, seed=seed).state_dict()


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_models_built_on_threads_at_once_have_their_own_seeds_weights() -> None:
    alone = {seed: weights(seed) for seed in SEEDS}
    with ThreadPoolExecutor(len(SEEDS)) as pool:
        for _ in range(3):
            together = dict(zip(SEEDS, pool.map(weights, SEEDS), strict=True))
            assert [s for s in SEEDS if not same(together[s], alone[s])] == []


def test_training_with_dropout_beside_model_builds_is_what_it_is_alone() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(512, 784, generator=gen)
    y = torch.randint(0, 10, (512,), generator=gen)
    params = {"local_epochs": 2, "batch_size": 32, "lr": 0.05}
    spec = {"arch": "mlp", "hidden": [64], "dropout": 0.5}

    def train() -> dict[str, torch.Tensor]:
        model = build_model(spec, FEATURES, seed=3)
        return train_local(model, x, y, params, seed=11, device="cpu").delta

    alone = train()
    done = threading.Event()

    def build_until_done() -> None:
        while not done.is_set():
            weights(5)
            time.sleep(0.001)  # lets a waiting thread have the generators (locks are unfair)

    with ThreadPoolExecutor(3) as pool:
        builders = [pool.submit(build_until_done) for _ in range(2)]
        try:
            beside = pool.submit(train).result()
        finally:
            done.set()
        for b in builders:
            b.result()
    assert same(beside, alone)
