"""A thousand virtual peers on MNIST 10k: the issue's scale, in one process, no stack.

Dirichlet(0.5) label skew over 1,000 peers, 100 sampled per round, 10 rounds, the
platform's default aggregation (FedAvg with its norm clipping and outlier bound). The
accuracy is printed as one JSON line; the test asserts that the job completes and
learns, never how long it took (``make bench-sim`` measures that).
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

import peertrain.sim as sim
from peertrain.dataset.domain.holdout import stratified_holdout

PEERS = 1000
SPEC = {
    "model": {"arch": "mlp", "hidden": [128]},
    "training": {
        "rounds": 10,
        "local_epochs": 1,
        "batch_size": 32,
        "lr": 0.05,
        "optimizer": "sgd",
        "seed": 3,
    },
    "aggregation": {"strategy": "fedavg", "peers_per_round": 100},
    "sharding": {"strategy": "dirichlet", "alpha": 0.5},
}


def mnist_dir() -> Path:
    """The shared MNIST files (``PEERTRAIN_DATA_DIR`` overrides ``../shared/data``)."""
    root = Path(__file__).resolve().parents[3]
    for base in (os.environ.get("PEERTRAIN_DATA_DIR", ""), root.parent / "shared" / "data"):
        if base and (Path(base) / "mnist").is_dir():
            return Path(base) / "mnist"
    return Path("/work/shared/data/mnist")


def _idx(path: Path) -> NDArray[np.uint8]:
    raw = gzip.decompress(path.read_bytes())
    dims = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def mnist_10k() -> sim.SimData:
    """MNIST 10k as the dataset service prepares a table: a stratified 20% holdout and
    every column standardised with the training part's mean and std (1 if constant)."""
    base = mnist_dir()
    if not (base / "t10k-images-idx3-ubyte.gz").is_file():
        pytest.fail(f"MNIST is missing from {base}; set PEERTRAIN_DATA_DIR")
    x = _idx(base / "t10k-images-idx3-ubyte.gz").reshape(10_000, -1).astype(np.float32)
    y = _idx(base / "t10k-labels-idx1-ubyte.gz").astype(np.int64)
    held = stratified_holdout(y, 10, 0.2, 3)
    mean, std = x[~held].mean(axis=0), x[~held].std(axis=0)
    x = (x - mean) / np.where(std > 1e-12, std, 1.0).astype(np.float32)
    return sim.from_arrays(x[~held], y[~held], x[held], y[held])


@pytest.mark.slow
def test_a_thousand_peers_on_mnist_100_a_round_complete_ten_rounds_and_learn() -> None:
    result = sim.run(SPEC, mnist_10k(), peers=PEERS, device="cpu")
    summary = {
        "test": "sim_1000_peers_mnist",
        **result.summary(),
        "peers_per_round": [m.peers for m in result.rounds],
    }
    print(json.dumps(summary))
    assert result.state == "completed", result.error
    assert [m.round for m in result.rounds] == list(range(1, 11))
    # 100 sampled a round; a skewed shard's update can be refused as a norm outlier
    # (and its retry, trained with the shard's seed, alike): the round closes without it
    assert all(90 <= m.peers <= 100 for m in result.rounds)
    assert result.rounds[-1].accuracy > 0.5
