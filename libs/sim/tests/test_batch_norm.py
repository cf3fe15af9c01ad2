"""A BatchNorm graph model on a Dirichlet split: FedAvg of its buffers, and FedBN."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from torch import nn

import peertrain.sim as sim
from peertrain.common.blobs import MemoryBlobStore
from peertrain.common.events.datasets import FeatureSpec, ImageEncoding
from peertrain.common.events.models import model_key
from peertrain.ml.graph import to_graph
from peertrain.ml.weights import state_from_bytes

BUFFERS = ("bn.running_mean", "bn.running_var")


class _ConvBN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


@pytest.fixture(scope="module")
def digits() -> sim.SimData:
    """scikit-learn's digits as 1x8x8 images (480 to train, 120 held out)."""
    d = load_digits()
    order = np.random.default_rng(0).permutation(len(d.target))[:600]
    x = (d.data[order] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = d.target[order].astype(np.int64)
    flat = sim.from_arrays(x[:480], y[:480], x[480:], y[480:])
    image = ImageEncoding(mode="L", channels=1, height=8, width=8, mean=(0.0,), std=(1.0,))
    features = FeatureSpec(
        kind="images",
        input_shape=(1, 8, 8),
        input_size=64,
        classes=flat.feature_spec.classes,
        image=image,
        label_column="label",
    )
    return dataclasses.replace(flat, train_x=x[:480], holdout_x=x[480:], feature_spec=features)


def _spec(**training: object) -> dict[str, object]:
    graph = to_graph(_ConvBN(), torch.zeros(2, 1, 8, 8)).model_dump(mode="json")
    return {
        "model": graph,
        "training": {"rounds": 2, "lr": 0.1, "batch_size": 32, "seed": 3, **training},
        "sharding": {"strategy": "dirichlet", "alpha": 0.3},
    }


def _final(result: sim.SimResult) -> dict[str, torch.Tensor]:
    assert result.state == "completed", result.error
    assert result.final_pt is not None
    state: dict[str, torch.Tensor] = torch.load(io.BytesIO(result.final_pt), weights_only=True)[
        "state_dict"
    ]
    return state


def test_fedavg_exports_the_weighted_mean_of_the_peers_running_stats(digits, monkeypatch) -> None:
    async def keep(self: MemoryBlobStore, prefix: str) -> int:
        return 0  # keep the rounds' updates, which the simulator frees after each round

    monkeypatch.setattr(MemoryBlobStore, "delete_prefix", keep)
    result = sim.run(_spec(), digits, peers=3, device="cpu")
    final = _final(result)
    assert result.blobs is not None
    events = {e.type: e.data for e in result.log.events}  # the last of each type
    closed, sharded = events["round.closed"], events["dataset.sharded"]
    rows = {s.index: s.rows for s in sharded.shards}
    before = state_from_bytes(result.blobs.objects[model_key(closed.job_id, closed.round - 1)])
    deltas = [
        (state_from_bytes(result.blobs.objects[u.key]), rows[u.shard]) for u in closed.included
    ]
    total = sum(w for _, w in deltas)
    for name in BUFFERS:
        mean = sum(d[name].double() * w for d, w in deltas) / total
        expected = (before[name].double() + mean).float()
        torch.testing.assert_close(final[name], expected, rtol=0, atol=1e-6)
        assert torch.equal(final[name], result.state_dict[name])
    counts = sum(int(d["bn.num_batches_tracked"]) * w for d, w in deltas) / total
    count = final["bn.num_batches_tracked"]
    assert count.dtype == torch.int64
    assert int(count) == int(before["bn.num_batches_tracked"]) + round(counts)
    assert not result.local_layers  # nothing kept on the peers


def test_fedbn_keeps_each_peers_batch_norm_and_exports_their_mean(digits) -> None:
    result = sim.run(_spec(batch_norm="local"), digits, peers=3, device="cpu")
    final = _final(result)
    assert len(result.local_layers) == 3
    for local in result.local_layers.values():
        assert set(local) == {*BUFFERS, "bn.weight", "bn.bias", "bn.num_batches_tracked"}
        assert not torch.equal(local["bn.running_mean"], final["bn.running_mean"])
    # the deltas are of the received version, so the export is the weighted mean of
    # the peers' own layers (every peer answered the last round)
    sharded = next(e.data for e in result.log.events if e.type == "dataset.sharded")
    rows = {s.peer_id: s.rows for s in sharded.shards}
    total = sum(rows.values())
    for name in (*BUFFERS, "bn.weight", "bn.bias"):
        mean = sum(t[name].double() * rows[p] for p, t in result.local_layers.items()) / total
        torch.testing.assert_close(final[name], mean.float(), rtol=0, atol=1e-6)
