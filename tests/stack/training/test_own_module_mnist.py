"""A researcher's own module (residual blocks, BatchNorm, dropout), sent through the SDK,
trains on MNIST 10k across 4 real peers to at least 98% holdout accuracy, within half a
point of the same module trained centrally with the same budget (the same epochs over
the same training rows, the same optimiser and schedule), measured on the same holdout.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from test_mnist import mnist
from torch import nn
from training_support import Platform, finished, job_arrays, peers_active

from peertrain.client import Client, MemoryTokenStore
from peertrain.common.specs import lr_for_round, parse_training_params
from peertrain.testkit.common import GATEWAY

pytestmark = [pytest.mark.stack, pytest.mark.slow]

TRAINING = {
    "rounds": 20,
    "local_epochs": 1,
    "batch_size": 64,
    "lr": 0.1,
    "momentum": 0.9,
    "seed": 7,
    "lr_schedule": {"kind": "cosine", "min_lr": 0.002},
}


class Block(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(out)))


class Net(nn.Module):
    """A small residual network for 28x28 digits given as 784 columns."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.block1 = Block(16)
        self.down = nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False)
        self.bn_down = nn.BatchNorm2d(32)
        self.block2 = Block(32)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view(-1, 1, 28, 28)
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 2)
        x = F.relu(self.bn_down(self.down(self.block1(x))))
        x = F.adaptive_avg_pool2d(self.block2(x), 1).flatten(1)
        return self.fc(self.drop(x))


def _central(x: torch.Tensor, y: torch.Tensor, hx: torch.Tensor, hy: torch.Tensor) -> float:
    """The same module, budget, optimiser and schedule in one process (plain torch)."""
    torch.manual_seed(0)
    model = Net()
    p = parse_training_params(TRAINING)
    opt = torch.optim.SGD(model.parameters(), lr=p.lr, momentum=p.momentum)
    order_gen = torch.Generator().manual_seed(p.seed)
    for epoch in range(1, p.rounds + 1):
        for group in opt.param_groups:
            group["lr"] = lr_for_round(p, epoch)
        model.train()
        order = torch.randperm(len(y), generator=order_gen)
        for start in range(0, len(y), p.batch_size):
            idx = order[start : start + p.batch_size]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        return float((model(hx).argmax(1) == hy).float().mean())


async def test_an_own_residual_module_reaches_98_on_mnist_as_central_training_does(
    platform: Platform, http: Any
) -> None:
    dataset_id = await mnist(platform)
    peers = [platform.peer(f"p{i}").peer_id for i in range(4)]
    await peers_active(platform, peers)
    torch.manual_seed(0)
    spec = {
        "name": "own-resnet-mnist",
        "dataset_id": dataset_id,
        "peers": peers,
        "training": TRAINING,
        "aggregation": {"strategy": "fedavg", "min_peers": 4, "round_deadline_s": 600},
        "sharding": {"strategy": "iid"},
    }

    def create() -> str:
        with Client(GATEWAY, token_store=MemoryTokenStore()) as pt:
            pt.login(platform.username, platform.password)
            return pt.create_job(spec, model=Net(), example_input=torch.zeros(2, 784))

    job_id = await asyncio.to_thread(create)
    job = await finished(platform, job_id, timeout=1500)
    assert job["state"] == "completed", job
    rounds = (await http.get(f"/api/jobs/{job_id}/metrics")).json()["rounds"]
    federated = rounds[-1]["accuracy"]
    config = (await http.get(f"/api/jobs/{job_id}/config")).json()
    x, y, hx, hy = await job_arrays(platform, config)
    central = await asyncio.to_thread(_central, x, y, hx, hy)
    shown = [round(r["accuracy"], 4) for r in rounds]
    assert federated >= 0.98, (shown, central)
    assert abs(federated - central) <= 0.005, (federated, central, shown)
