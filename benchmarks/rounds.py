"""Benchmark: what a federated round costs on the real platform, beyond training.

4 real peers, logistic regression on scikit-learn's digits (uploaded as CSV, 20%
held out), 20 rounds, FedAvg, through the gateway on the local stack with every service
running as a process (the end-to-end tests' platform).

* ``round_overhead_p50_ms``: per round, wall time from ``round.opened`` to
  ``round.closed`` minus the slowest peer's compute (the sum of its reported epoch
  durations in that round); the median over rounds.
* ``time_to_target_s``: from ``job.created`` to the first model version whose holdout
  accuracy is >= 0.95 (``model.evaluated``).
* ``centralized_time_to_target_s``: the same model, optimiser and budget trained in this
  process on all the training data (the union of the shards), evaluated after each
  epoch, until the same target.

Prints one JSON line last. Goal: ``round_overhead_p50_ms`` <= 100.
"""

from __future__ import annotations

import asyncio
import io
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.datasets import load_digits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "stack" / "training"))

from training_support import (
    Platform,
    create_job,
    dataset,
    finished,
    peers_active,
    run_platform,
)

from peertrain.common.blobs import BlobStore
from peertrain.common.settings import ServiceSettings
from peertrain.ml.training import evaluate, train_local
from peertrain.ml.zoo import build_model

TARGET = 0.95
ROUNDS = 20
MODEL = {"arch": "logreg"}
TRAINING = {
    "rounds": ROUNDS,
    "local_epochs": 1,
    "batch_size": 32,
    "lr": 0.1,
    "optimizer": "sgd",
    "momentum": 0.9,
    "seed": 3,
}


def digits_csv() -> bytes:
    digits = load_digits()
    out = io.StringIO()
    out.write("label," + ",".join(f"p{i}" for i in range(64)) + "\n")
    table = np.concatenate([digits.target[:, None], digits.data.astype(int)], axis=1)
    np.savetxt(out, table, fmt="%d", delimiter=",")
    return out.getvalue().encode()


def _time(value: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(value).timestamp()


def _by_round(events: list[dict[str, Any]], kind: str) -> dict[int, float]:
    # a round opened again (below min_peers) counts from its last opening
    return {e["data"]["round"]: _time(e["occurred_at"]) for e in events if e["type"] == kind}


async def federated(p: Platform) -> dict[str, Any]:
    dataset_id = await dataset(
        p, "digits", "digits.csv", digits_csv(), label_column="label", holdout_fraction="0.2"
    )
    peers = [p.peer(f"b{i}").peer_id for i in range(4)]
    await peers_active(p, peers)
    body = {
        "name": "bench-rounds",
        "dataset_id": dataset_id,
        "peers": peers,
        "model": MODEL,
        "training": TRAINING,
        "aggregation": {"strategy": "fedavg", "min_peers": 4, "round_deadline_s": 120},
        "sharding": {"strategy": "iid"},
    }
    job_id = await create_job(p, body)
    job = await finished(p, job_id, timeout=1200)
    if job["state"] != "completed":
        raise RuntimeError(f"the job ended {job['state']}: {job.get('error')}")
    async with p.client() as http:
        events = (await http.get(f"/api/jobs/{job_id}/events")).json()["items"]
        metrics = (await http.get(f"/api/jobs/{job_id}/metrics")).json()
        config = (await http.get(f"/api/jobs/{job_id}/config")).json()
    created = next(_time(e["occurred_at"]) for e in events if e["type"] == "job.created")
    opened = _by_round(events, "round.opened")
    closed = _by_round(events, "round.closed")
    compute: dict[int, dict[str, float]] = {}
    for m in metrics["peers"]:
        per_peer = compute.setdefault(m["round"], {})
        per_peer[m["peer_id"]] = per_peer.get(m["peer_id"], 0.0) + m["duration_s"]
    overheads = [
        (closed[r] - opened[r] - max(compute.get(r, {"": 0.0}).values())) * 1000
        for r in sorted(closed)
        if r in opened
    ]
    reached = [
        _time(e["occurred_at"])
        for e in events
        if e["type"] == "model.evaluated" and e["data"]["accuracy"] >= TARGET
    ]
    round_walls = [(closed[r] - opened[r]) * 1000 for r in sorted(closed) if r in opened]
    return {
        "round_overhead_p50_ms": round(statistics.median(overheads), 1),
        "round_overhead_p90_ms": round(sorted(overheads)[int(0.9 * (len(overheads) - 1))], 1),
        "round_wall_p50_ms": round(statistics.median(round_walls), 1),
        "time_to_target_s": round(min(reached) - created, 2) if reached else None,
        "final_accuracy": metrics["rounds"][-1]["accuracy"],
        "config": config,
    }


async def centralized(p: Platform, config: dict[str, Any]) -> float | None:
    settings = ServiceSettings(s3_bucket=p.bucket)

    async def npz(blobs: BlobStore, key: str) -> tuple[torch.Tensor, torch.Tensor]:
        with np.load(io.BytesIO(await blobs.get_bytes(key)), allow_pickle=False) as f:
            return torch.from_numpy(f["X"]), torch.from_numpy(f["y"])

    async with BlobStore(settings.blob_store_config()) as blobs:
        parts = [await npz(blobs, s["key"]) for s in config["shards"]]
        hx, hy = await npz(blobs, config["holdout"]["key"])
    x, y = torch.cat([a for a, _ in parts]), torch.cat([b for _, b in parts])
    start = time.perf_counter()
    model = build_model(MODEL, config["feature_spec"], seed=TRAINING["seed"])
    for epoch in range(ROUNDS):
        params = {**TRAINING, "local_epochs": 1}
        train_local(model, x, y, params, seed=epoch, device="cpu", threads=1)
        if evaluate(model, hx, hy, device="cpu")["accuracy"] >= TARGET:
            return time.perf_counter() - start
    return None


class _Factory:
    """Just enough of pytest's TempPathFactory for the platform."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def mktemp(self, name: str) -> Path:
        path = self.base / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def getbasetemp(self) -> Path:
        return self.base


def main() -> None:
    import tempfile
    import uuid

    base = Path(tempfile.mkdtemp(prefix="bench-rounds-"))
    gen = run_platform(uuid.uuid4().hex[:8], _Factory(base))  # type: ignore[arg-type]
    p = next(gen)
    try:
        fed = asyncio.run(federated(p))
        config = fed.pop("config")
        central = asyncio.run(centralized(p, config))
    finally:
        gen.close()
    result = {
        **fed,
        "centralized_time_to_target_s": round(central, 3) if central is not None else None,
        "target_accuracy": TARGET,
        "rounds": ROUNDS,
        "peers": 4,
        "model": "logreg",
        "logs": str(base),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
