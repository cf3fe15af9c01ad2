"""A researcher's own ``nn.Module`` on the real stack: sent through the SDK as a module
object (a graph of standard layers travels, never code), trained by real peers, and the
final model is the module's weights; graphs that are not allowed are refused with a 422
naming the node and the op before anything is allocated.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from test_contract import digits
from torch import nn
from training_support import Platform, every_item, finished, job_events, peers_active

from peertrain.client import Client, MemoryTokenStore
from peertrain.ml.export.write import load_final
from peertrain.ml.graph import to_graph
from peertrain.testkit.common import GATEWAY

pytestmark = [pytest.mark.stack]


class Residual(nn.Module):
    """A researcher's block: conv, BatchNorm, a skip connection."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.bn(self.conv(x)))


class DigitsNet(nn.Module):
    """The researcher's network for 8x8 digits given as 64 columns."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.block = Residual(8)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view(-1, 1, 8, 8)
        x = F.max_pool2d(self.block(F.relu(self.stem(x))), 2)
        return self.head(self.drop(torch.flatten(x, 1)))


def _client(platform: Platform) -> Client:
    pt = Client(GATEWAY, token_store=MemoryTokenStore())
    pt.login(platform.username, platform.password)
    return pt


async def test_a_module_sent_through_the_sdk_trains_on_real_peers(
    platform: Platform, http: Any
) -> None:
    dataset_id = await digits(platform)
    peers = [platform.peer(n).peer_id for n in ("p0", "p1")]
    await peers_active(platform, peers)
    torch.manual_seed(3)
    module = DigitsNet()
    spec = {
        "name": "own-module",
        "dataset_id": dataset_id,
        "peers": peers,
        "training": {"rounds": 3, "lr": 0.1, "momentum": 0.9, "batch_size": 32},
    }

    def create() -> str:
        with _client(platform) as pt:
            return pt.create_job(spec, model=module, example_input=torch.zeros(2, 64))

    job_id = await asyncio.to_thread(create)
    job = await finished(platform, job_id, timeout=300)
    assert job["state"] == "completed", job
    assert job["model"]["arch"] == "graph"
    assert job["latest"]["accuracy"] > 0.5, job["latest"]  # it learnt (10 classes)
    # the final model is the module's weights: the researcher loads them into the module
    r = await http.get(f"/api/models/{job_id}/final", params={"format": "pt"})
    assert r.status_code == 200, r.text
    final = load_final(r.content)
    module.load_state_dict(final.model.state_dict())  # same names, shapes
    module.eval()
    x = torch.randn(5, 64)
    with torch.no_grad():
        assert torch.equal(module(x), final.model(x))
    types = [e["type"] for e in await job_events(http, job_id)]
    assert types.count("round.closed") == 3


def _graph() -> dict[str, Any]:
    torch.manual_seed(0)
    return to_graph(DigitsNet(), torch.zeros(2, 64)).model_dump(mode="json")


def _node(graph: dict[str, Any], op: str) -> dict[str, Any]:
    node: dict[str, Any] = next(n for n in graph["nodes"] if n["op"] == op)
    return node


def _with(op: str, **args: Any) -> dict[str, Any]:
    graph = _graph()
    node = _node(graph, op)
    node["args"] = {**node["args"], **args}
    return graph


def _renamed(op: str, to: str) -> dict[str, Any]:
    graph = _graph()
    _node(graph, op)["op"] = to
    return graph


@pytest.mark.parametrize(
    ("model", "says"),
    [
        (_renamed("relu", "exp"), "node 2 'relu' (op 'exp'): not an allowed op"),
        (_renamed("relu", "os.system"), "(op 'os.system'): not an allowed op"),
        (_renamed("relu", "torch.ops.custom.hack"), "(op 'torch.ops.custom.hack'): not an"),
        (_with("linear", out_features=4_000_000), "(op 'linear'): the layers so far hold"),
        (_with("conv2d", out_channels=200_000), "(op 'conv2d'): 12,800,000 values per sample"),
        ({"arch": "graph", "nodes": "truncated"}, "nodes"),
        ({**_graph(), "nodes": _graph()["nodes"][:3]}, "output"),
        ({**_graph(), "output": "__import__('os')"}, "output"),
    ],
    ids=[
        "op-outside-allow-list",
        "a-name-to-import",
        "custom-op",
        "params-over-budget",
        "activation-bomb",
        "malformed",
        "truncated",
        "code-as-output",
    ],
)
async def test_graphs_that_are_not_allowed_are_refused_naming_node_and_op(
    platform: Platform, http: Any, model: dict[str, Any], says: str
) -> None:
    dataset_id = await digits(platform)
    peers = [platform.peer("p0").peer_id]
    await peers_active(platform, peers)
    body = {"name": "hostile-graph", "dataset_id": dataset_id, "peers": peers, "model": model}
    before = len(await every_item(http, "/api/jobs"))
    r = await http.post("/api/jobs", json=body)
    assert r.status_code == 422, r.text
    error = json.dumps(r.json()["error"])
    assert says in error, error
    assert all("model" in str(p["loc"]) for p in r.json()["error"]["detail"]), error
    assert len(await every_item(http, "/api/jobs")) == before  # nothing was created


class BatchNormNet(nn.Module):
    """Convolutions with BatchNorm: running statistics that travel in every update."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn(self.conv(x.view(-1, 1, 8, 8)))), 2)
        return self.head(torch.flatten(x, 1))


@pytest.mark.parametrize("batch_norm", ["aggregate", "local"])
async def test_batch_norm_on_a_dirichlet_split_completes_aggregated_or_kept_local(
    platform: Platform, http: Any, batch_norm: str
) -> None:
    """FedAvg of BatchNorm statistics, and FedBN (each peer keeps its own), on skewed
    shards: both complete; the exported model carries the last version's statistics
    (the peers' weighted mean), moved from their initial values."""
    dataset_id = await digits(platform)
    peers = [platform.peer(n).peer_id for n in ("p0", "p1", "p2")]
    await peers_active(platform, peers)
    torch.manual_seed(4)
    spec = {
        "name": f"bn-{batch_norm}",
        "dataset_id": dataset_id,
        "peers": peers,
        "training": {"rounds": 3, "lr": 0.05, "momentum": 0.9, "batch_norm": batch_norm},
        "sharding": {"strategy": "dirichlet", "alpha": 0.3},
    }

    def create() -> str:
        with _client(platform) as pt:
            return pt.create_job(spec, model=BatchNormNet(), example_input=torch.zeros(2, 64))

    job_id = await asyncio.to_thread(create)
    job = await finished(platform, job_id, timeout=300)
    assert job["state"] == "completed", job
    r = await http.get(f"/api/models/{job_id}/final", params={"format": "pt"})
    final = load_final(r.content).model.state_dict()
    assert final["bn.running_mean"].abs().sum() > 0  # moved from the initial zeros
    assert int(final["bn.num_batches_tracked"]) > 0
