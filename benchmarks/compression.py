"""Benchmark: compressed updates on the real platform, bytes against accuracy.

MNIST 10k (the shipped t10k files, uploaded as CSV, 20% held out with a fixed seed), 8
real peers on a Dirichlet(0.5) label split, an MLP 784-128-10 (the zoo's ``mlp`` with
``hidden: [128]``), SGD lr 0.05 with momentum 0.9, batch 32, 1 local epoch,
``BENCH_COMPRESSION_ROUNDS`` rounds (default 40), FedAvg, through the gateway on the
local stack with every service running as a process (the end-to-end tests' platform).
The same job runs four times, its updates travelling as ``none`` (float32), ``fp16``,
``int8`` (blockwise, 256 values per scale) and ``topk`` (1% of each tensor, with error
feedback on the peers).

From each job's events and metrics:

* ``bytes_per_round_<kind>``: the bytes of the accepted updates (safetensors objects as
  uploaded, all peers) per round, the mean over rounds;
* ``final_accuracy_<kind>``: the holdout accuracy of the last model version;
* ``fewer_bytes_<kind>``: ``bytes_per_round_none / bytes_per_round_<kind>``;
* ``accuracy_loss_points_<kind>``: ``final_accuracy_none - final_accuracy_<kind>``, in
  percentage points;
* ``bytes_down_per_peer_round``: the model version a peer fetches each round (the same
  for every kind: versions are stored in float32).

Prints one JSON line last. Goals: int8 >= 3.9x fewer bytes with <= 0.5 point loss;
top-k 1% >= 50x fewer with <= 1 point loss.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "stack" / "training"))

from platform_jobs import running_platform
from training_support import (
    Platform,
    create_job,
    dataset,
    finished,
    job_events,
    mnist_csv_gz,
    peers_active,
)

ROUNDS = int(os.environ.get("BENCH_COMPRESSION_ROUNDS", "40"))
PEERS = 8
KINDS: dict[str, dict[str, Any]] = {
    "none": {"kind": "none"},
    "fp16": {"kind": "fp16"},
    "int8": {"kind": "int8", "block": 256},
    "topk": {"kind": "topk", "ratio": 0.01},
}
MODEL = {"arch": "mlp", "hidden": [128]}
TRAINING = {
    "rounds": ROUNDS,
    "local_epochs": 1,
    "batch_size": 32,
    "lr": 0.05,
    "optimizer": "sgd",
    "momentum": 0.9,
    "seed": 7,
}
GOALS = {"int8": (3.9, 0.5), "topk": (50.0, 1.0)}


async def one_job(p: Platform, dataset_id: str, peers: list[str], kind: str) -> dict[str, Any]:
    """The job with updates as ``kind``; its figures."""
    body = {
        "name": f"bench-compression-{kind}",
        "dataset_id": dataset_id,
        "peers": peers,
        "model": MODEL,
        "training": {**TRAINING, "compression": KINDS[kind]},
        "aggregation": {"strategy": "fedavg", "min_peers": PEERS, "round_deadline_s": 300},
        "sharding": {"strategy": "dirichlet", "alpha": 0.5},
    }
    started = time.monotonic()
    job_id = await create_job(p, body)
    job = await finished(p, job_id, timeout=1800)
    if job["state"] != "completed":
        raise RuntimeError(f"the {kind} job ended {job['state']}: {job.get('error')}")
    async with p.client() as http:
        events = await job_events(http, job_id)
        metrics = (await http.get(f"/api/jobs/{job_id}/metrics")).json()
    rounds = metrics["rounds"]
    accepted = [e["data"] for e in events if e["type"] == "update.accepted"]
    if {a.get("compression") for a in accepted} != {kind}:
        raise RuntimeError(f"the {kind} job's updates say otherwise: {accepted[:1]}")
    return {
        "bytes_per_round": statistics.mean(r["bytes_up"] for r in rounds),
        "dense_bytes_per_round": statistics.mean(r["bytes_up_dense"] for r in rounds),
        "bytes_down_per_peer_round": rounds[-1]["bytes_down_per_peer"],
        "final_accuracy": rounds[-1]["accuracy"],
        "accuracy_curve": [round(r["accuracy"], 4) for r in rounds],
        "updates_per_round": statistics.mean(r["peers"] for r in rounds),
        "wall_s": round(time.monotonic() - started, 1),
    }


async def run_all(p: Platform) -> dict[str, dict[str, Any]]:
    dataset_id = await dataset(
        p,
        "mnist-10k",
        "mnist.csv.gz",
        mnist_csv_gz(),
        label_column="label",
        holdout_fraction="0.2",
        holdout_seed="1",
    )
    peers = [p.peer(f"z{i}").peer_id for i in range(PEERS)]
    await peers_active(p, peers)
    found = {}
    for kind in KINDS:
        found[kind] = await one_job(p, dataset_id, peers, kind)
        print(f"{kind}: {json.dumps(found[kind])}", file=sys.stderr, flush=True)
    return found


def main() -> None:
    with running_platform("bench-compression-") as p:
        found = asyncio.run(run_all(p))
    none = found["none"]
    result: dict[str, Any] = {}
    for kind, f in found.items():
        result[f"bytes_per_round_{kind}"] = round(f["bytes_per_round"])
        result[f"final_accuracy_{kind}"] = round(f["final_accuracy"], 4)
    for kind, f in found.items():
        if kind == "none":
            continue
        result[f"fewer_bytes_{kind}"] = round(none["bytes_per_round"] / f["bytes_per_round"], 2)
        loss = (none["final_accuracy"] - f["final_accuracy"]) * 100
        result[f"accuracy_loss_points_{kind}"] = round(loss, 2)
    result.update(
        {
            "goals_met": {
                kind: result[f"fewer_bytes_{kind}"] >= fewer
                and result[f"accuracy_loss_points_{kind}"] <= points
                for kind, (fewer, points) in GOALS.items()
            },
            "bytes_down_per_peer_round": none["bytes_down_per_peer_round"],
            "dense_bytes_per_round": round(none["dense_bytes_per_round"]),
            "accuracy_curves": {k: f["accuracy_curve"] for k, f in found.items()},
            "wall_s": {k: f["wall_s"] for k, f in found.items()},
            "rounds": ROUNDS,
            "peers": PEERS,
            "model": "mlp 784-128-10",
            "sharding": "dirichlet alpha 0.5",
            "goal": {"int8": "3.9x fewer, <= 0.5 point", "topk": "50x fewer, <= 1 point"},
            "logs": str(p.base.parent),
        }
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
