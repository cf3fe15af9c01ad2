"""Benchmark: a researcher's ResNet-18, sent as a layer graph, trained on the real platform.

Issue 32's task: ResNet-18 (torchvision's BasicBlock x [2, 2, 2, 2] with the CIFAR stem:
a 3x3 convolution, no max-pool; 11.17 M parameters, 44.7 MB as float32) written here as
a plain ``nn.Module`` and submitted with the SDK's ``create_job(model=...,
example_input=...)``, which turns it into a graph (``peertrain.ml.graph.to_graph``).
Data: synthetic CIFAR-shaped images (32x32 RGB PNGs, 10 class folders, each class a
colour plus noise) uploaded as a ``.zip`` of class folders, the dataset service's own
image format: 2,100 images, 100 held out (10 a class), 2,000 to train. 4 real peer
processes (one torch thread each) x 500 images, 1 local epoch, 3 rounds, FedAvg, SGD
(lr 0.05, momentum 0.9, batch 32; ``max_update_norm`` the default, sized for the model),
through the gateway on the local stack with every service a process (the end-to-end
tests' platform). Then the same epochs (3 x the 2,000 training images, the job's own
shards) in this process with plain torch: the baseline.
Then a second, shorter job on 16 peers (2 rounds, 125 images each, batch 16, lr 0.01) for the
aggregator's memory with 4x the updates (fewer peers when this machine's free memory
cannot hold 16).

Figures (seconds; MB = 10^6 bytes; medians over the rounds):

* ``round_wall_p50_s``: from model version ``r - 1`` to model version ``r``
  (``model.version_created``).
* ``peer_compute_p50_s``: the slowest peer's compute in the round (the sum of its
  reported epoch durations, ``GET /api/jobs/{id}/metrics``).
* ``round_overhead_p50_s``: per round, wall minus the slowest peer's compute (fetching
  the model and the shard, building it from its graph, serialising and uploading the
  update, validating and aggregating it, storing and evaluating the version, the
  messages between); ``overhead_share``: ``round_overhead_p50_s / round_wall_p50_s``.
* ``bytes_down_per_peer_round``: the model version a round's tasks fetch (its
  ``model.version_created`` size); the shard (first round only, then cached) is not
  counted. ``bytes_up_per_peer_round``: the updates' size (``update.accepted``).
* ``aggregator_peak_rss_mb`` (``_16_peers``): the aggregator process's peak RSS while
  the 4-peer (16-peer) job ran, sampled every 20 ms.
* ``baseline_epoch_s``: one epoch over the 2,000 images in this process (plain torch
  loop, torch's default threads); the median of 3.

Goals: ``overhead_share`` <= 0.10; bytes each way <= 1.05 x the model's size; the
aggregator's peak RSS <= 3 x the model + 300 MB, and flat from 4 to 16 peers. Prints one
JSON line last. ``BENCH_MODELS_WIDE_PEERS`` (default 16; ``0`` skips that job);
``BENCH_MODELS_TRACE=FILE`` writes the first job's events there. ``critical_path_p50_s``
splits the round along its last peer: version to ``round.opened``, to its
``task.accepted``, fetching the model (and shard) and building it, its compute, its
upload and the aggregator's check (to ``update.accepted``), then aggregating and storing
the next version.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psutil
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "stack" / "training"))

from platform_jobs import by_round, event_time, peer_compute, running_platform
from rss import MiB, RssSampler
from training_support import (
    Platform,
    colour_images_zip,
    dataset,
    finished,
    job_arrays,
    job_events,
    peers_active,
    wait_for,
)

from peertrain.client import ApiError, AsyncClient
from peertrain.testkit.common import GATEWAY

MB = 1_000_000
CLASSES = 10
TRAIN_PER_CLASS = 200
HOLDOUT_PER_CLASS = 10
PEERS = 4
ROUNDS = 3
WIDE_PEERS = int(os.environ.get("BENCH_MODELS_WIDE_PEERS", "16"))
WIDE_ROUNDS = 2
TRAINING = {
    "local_epochs": 1,
    "batch_size": 32,
    "lr": 0.05,
    "optimizer": "sgd",
    "momentum": 0.9,
    "seed": 3,
}
"""One epoch moves the weights and BatchNorm's running statistics by an L2 norm near
4,900 here, under the update bound sized for the model (10,033)."""
WIDE_TRAINING = {"batch_size": 16, "lr": 0.01}
"""The wide job's peers train with half the batch (and a rate that keeps its 125-image
shards' updates under the bound: at batch 8 and lr 0.05 one shard's update had a norm of
52,000): the aggregator's memory does not depend on either, and each peer's does
(activations), so 16 peers fit this machine."""
GOALS = {"overhead_share": 0.10, "bytes_per_model": 1.05, "rss_models": 3, "rss_plus_mb": 300}


class BasicBlock(nn.Module):
    """torchvision's ResNet basic block: two 3x3 convolutions and a shortcut."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):
    """ResNet-18 for 32x32 images: torchvision's layers, the CIFAR stem."""

    def __init__(self, num_classes: int = CLASSES) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._layer(64, 64, 1)
        self.layer2 = self._layer(64, 128, 2)
        self.layer3 = self._layer(128, 256, 2)
        self.layer4 = self._layer(256, 512, 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    @staticmethod
    def _layer(cin: int, cout: int, stride: int) -> nn.Sequential:
        return nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


async def run_job(
    p: Platform,
    dataset_id: str,
    names: list[str],
    rounds: int,
    name: str,
    training: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One FedAvg job of ``ResNet18`` on the peers called ``names``; its events, metrics
    and config once it completed."""
    peers = [p.peer(n).peer_id for n in names]
    await peers_active(p, peers)
    body = {
        "name": name,
        "dataset_id": dataset_id,
        "peers": peers,
        "training": {**TRAINING, "rounds": rounds, **(training or {})},
        "aggregation": {
            "strategy": "fedavg",
            "min_peers": len(peers),
            "round_deadline_s": 1800,
        },
        "sharding": {"strategy": "iid"},
    }
    assert p.auth is not None
    async with AsyncClient(GATEWAY, tokens=p.auth.tokens, timeout=120) as pt:

        async def created() -> str | None:
            try:
                return await pt.create_job(
                    body, model=ResNet18(), example_input=torch.zeros(2, 3, 32, 32)
                )
            except ApiError as exc:
                if exc.code == "peers_unavailable":  # the orchestrator has not seen them yet
                    return None
                raise

        job_id: str = await wait_for(created, timeout=120, what="job created", every=2.0)
    job = await finished(p, job_id, timeout=3600)
    if job["state"] != "completed":
        raise RuntimeError(f"job {name} ended {job['state']}: {job.get('error')}")
    async with p.client() as http:
        events = await job_events(http, job_id)
        metrics = (await http.get(f"/api/jobs/{job_id}/metrics")).json()
        config = (await http.get(f"/api/jobs/{job_id}/config")).json()
    return {"job_id": job_id, "events": events, "metrics": metrics, "config": config}


def round_figures(events: list[dict[str, Any]], metrics: dict[str, Any]) -> dict[str, Any]:
    """Wall, slowest compute, overhead and bytes per round; their medians."""
    versions = by_round(events, "model.version_created", key="version")
    sizes = {
        e["data"]["version"]: e["data"]["size"]
        for e in events
        if e["type"] == "model.version_created"
    }
    compute = peer_compute(metrics)
    rounds = [r for r in sorted(versions) if r >= 1 and r - 1 in versions]
    walls = [versions[r] - versions[r - 1] for r in rounds]
    slowest = [max(compute[r].values()) for r in rounds]
    overheads = [w - c for w, c in zip(walls, slowest, strict=True)]
    ups = [e["data"]["size"] for e in events if e["type"] == "update.accepted"]
    wall, overhead = statistics.median(walls), statistics.median(overheads)
    return {
        "round_wall_p50_s": round(wall, 2),
        "peer_compute_p50_s": round(statistics.median(slowest), 2),
        "round_overhead_p50_s": round(overhead, 2),
        "overhead_share": round(overhead / wall, 3),
        "bytes_down_per_peer_round": int(statistics.median(sizes[r - 1] for r in rounds)),
        "bytes_up_per_peer_round": int(statistics.median(ups)),
        "model_bytes": sizes[0],
        "round_walls_s": [round(w, 2) for w in walls],
        "round_overheads_s": [round(o, 2) for o in overheads],
        "final_accuracy": metrics["rounds"][-1]["accuracy"],
    }


def critical_path(
    events: list[dict[str, Any]], metrics: dict[str, Any], rounds: int
) -> dict[str, float]:
    """Each round's wall split along its last peer (the one whose update was accepted
    last), seconds, medians over the rounds; the parts add up to the round's wall."""
    at = event_time
    version = by_round(events, "model.version_created", key="version")
    opened = by_round(events, "round.opened")
    compute = peer_compute(metrics)
    parts: dict[str, list[float]] = {}

    def last(kind: str, r: int, peer: str) -> float:
        return max(
            at(e["occurred_at"])
            for e in events
            if e["type"] == kind and e["data"]["round"] == r and e["data"]["peer_id"] == peer
        )

    for r in range(1, rounds + 1):
        updates = [e for e in events if e["type"] == "update.accepted" and e["data"]["round"] == r]
        peer = max(updates, key=lambda e: at(e["occurred_at"]))["data"]["peer_id"]
        accepted, trained = last("task.accepted", r, peer), last("task.progress", r, peer)
        uploaded = last("update.accepted", r, peer)
        for name, seconds in {
            "version_to_round_opened": opened[r] - version[r - 1],
            "round_opened_to_task_accepted": accepted - opened[r],
            "fetch_and_build": trained - compute[r][peer] - accepted,
            "compute": compute[r][peer],
            "upload_and_validate": uploaded - trained,
            "aggregate_store_version": version[r] - uploaded,
        }.items():
            parts.setdefault(name, []).append(seconds)
    return {name: round(statistics.median(values), 2) for name, values in parts.items()}


def baseline_epochs(x: torch.Tensor, y: torch.Tensor, epochs: int) -> list[float]:
    """Seconds of each epoch of ``ResNet18`` on ``x, y`` with a plain torch loop."""
    torch.manual_seed(TRAINING["seed"])
    model = ResNet18().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    batch = int(TRAINING["batch_size"])
    took = []
    for epoch in range(epochs):
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        started = time.perf_counter()
        for i in range(0, len(x), batch):
            idx = order[i : i + batch]
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
        took.append(time.perf_counter() - started)
    return took


def wide_peer_count(p: Platform, peer_peak: int) -> tuple[int, str | None]:
    """How many peers this machine's free memory holds for the wide job (up to
    ``WIDE_PEERS``), and a note when fewer.

    ``peer_peak`` is the 4-peer job's largest peer (batch 32, 500 images), an upper
    bound of a wide job's peer (batch 16, 125 images), so it is taken as it is; 2 GB
    stay free for the rest."""
    free = psutil.virtual_memory().available
    extra = int((free - 2_000 * MB) // peer_peak)
    fits = min(WIDE_PEERS, len(p.peers) + max(extra, 0))
    if fits >= WIDE_PEERS:
        return WIDE_PEERS, None
    return fits, (
        f"{WIDE_PEERS} peers need ~{(WIDE_PEERS - len(p.peers)) * peer_peak / MB:.0f} MB "
        f"more; {free / MB:.0f} MB free: ran {fits}"
    )


def log(message: str) -> None:
    print(f"[bench-models] {message}", file=sys.stderr, flush=True)


async def bench(p: Platform) -> dict[str, Any]:
    assert p.services["aggregator"].pid is not None
    notes: list[str] = []
    with RssSampler(p.services["aggregator"].pid) as rss:
        log("uploading 2,100 synthetic 32x32 images")
        dataset_id = await dataset(
            p,
            "cifar-shaped",
            "cifar-shaped.zip",
            colour_images_zip(CLASSES, TRAIN_PER_CLASS + HOLDOUT_PER_CLASS),
            holdout_fraction=f"{HOLDOUT_PER_CLASS / (TRAIN_PER_CLASS + HOLDOUT_PER_CLASS):.10f}",
            image_size="32x32",
        )
        names = [f"m{i}" for i in range(PEERS)]
        for n in names:
            p.peer(n)
        rss.mark("before")
        log(f"job: {PEERS} peers x {ROUNDS} rounds")
        with ExitStack() as stack:
            peer_rss = [
                stack.enter_context(RssSampler(peer.proc.pid, interval_s=0.5))
                for peer in p.peers.values()
                if peer.proc is not None
            ]
            job = await run_job(p, dataset_id, names, ROUNDS, "bench-models")
        rss.mark("peers_4")
        peer_peak = max(s.peak for s in peer_rss)
        figures = round_figures(job["events"], job["metrics"])
        figures["critical_path_p50_s"] = critical_path(job["events"], job["metrics"], ROUNDS)
        if trace := os.environ.get("BENCH_MODELS_TRACE"):  # the job's events, to study a round
            await asyncio.to_thread(Path(trace).write_text, json.dumps(job["events"], indent=1))
        log(f"4 peers: {figures}")

        log("baseline: the same epochs in this process")
        x, y, _, _ = await job_arrays(p, job["config"])
        epochs = await asyncio.to_thread(baseline_epochs, x, y, ROUNDS)

        wide_rss_mb: float | None = None
        wide_wall: float | None = None
        wide_peers = 0
        if WIDE_PEERS:
            wide_peers, note = wide_peer_count(p, peer_peak)
            if note:
                notes.append(note)
            if wide_peers > PEERS:
                log(f"job: {wide_peers} peers x {WIDE_ROUNDS} rounds")
                rss.mark("between")
                wide = await run_job(
                    p,
                    dataset_id,
                    [f"m{i}" for i in range(wide_peers)],
                    WIDE_ROUNDS,
                    "bench-models-wide",
                    WIDE_TRAINING,
                )
                rss.mark("wide")
                wide_rss_mb = round(rss.phases["wide"] * MiB / MB, 1)
                wide_wall = round_figures(wide["events"], wide["metrics"])["round_wall_p50_s"]
                log(f"{wide_peers} peers: round wall p50 {wide_wall} s")
    params = sum(t.numel() for t in ResNet18().parameters())
    model_mb = figures.pop("model_bytes") / MB
    rss_mb = round(rss.phases["peers_4"] * MiB / MB, 1)
    rss_goal = GOALS["rss_models"] * model_mb + GOALS["rss_plus_mb"]
    if wide_peers != 16:
        notes.append(f"aggregator_peak_rss_mb_16_peers: measured with {wide_peers} peers")
    return {
        "params": params,
        "model_mb": round(model_mb, 2),
        "round_wall_p50_s": figures.pop("round_wall_p50_s"),
        "peer_compute_p50_s": figures.pop("peer_compute_p50_s"),
        "round_overhead_p50_s": figures.pop("round_overhead_p50_s"),
        "overhead_share": figures.pop("overhead_share"),
        "bytes_down_per_peer_round": figures.pop("bytes_down_per_peer_round"),
        "bytes_up_per_peer_round": figures.pop("bytes_up_per_peer_round"),
        "aggregator_peak_rss_mb": rss_mb,
        "aggregator_peak_rss_mb_16_peers": wide_rss_mb if wide_peers == 16 else None,
        "baseline_epoch_s": round(statistics.median(epochs), 2),
        **figures,
        "aggregator_peak_rss_mb_wide": wide_rss_mb,
        "wide_peers": wide_peers,
        "aggregator_idle_rss_mb": round(rss.phases["before"] * MiB / MB, 1),
        "wide_round_wall_p50_s": wide_wall,
        "peer_peak_rss_mb": round(peer_peak / MB, 1),
        "baseline_epochs_s": [round(e, 2) for e in epochs],
        "baseline_threads": torch.get_num_threads(),
        "goal": {
            "overhead_share": GOALS["overhead_share"],
            "bytes_each_way": round(GOALS["bytes_per_model"] * model_mb * MB),
            "aggregator_peak_rss_mb": round(rss_goal, 1),
        },
        "peers": PEERS,
        "rounds": ROUNDS,
        "images_per_peer": len(x) // PEERS,
        "model": "resnet18 (CIFAR stem) as a graph",
        "data": "synthetic 32x32 RGB PNGs, zip of class folders",
        "notes": notes,
    }


def main() -> None:
    with running_platform("bench-models-") as p:
        result = asyncio.run(bench(p))
        result["logs"] = str(p.base.parent)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
