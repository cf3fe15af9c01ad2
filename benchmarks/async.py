"""Benchmark: asynchronous rounds (FedBuff) against synchronous FedAvg, uneven peers.

MNIST 10k (``/work/shared/data``, uploaded as a user would, 20% held out, holdout seed 1),
the zoo's CNN (two conv blocks of 8 and 16 channels, hidden 64; ``BENCH_ASYNC_MODEL=mlp``:
the MLP 784-128-10 of the earlier figures, the images then as a CSV of pixels), 8 real
peers on a Dirichlet(0.5) split, slowed by factors 1, 1,
2, 2, 4, 4, 8, 8 (``peertrain-peer run --slowdown``: a peer waits ``F - 1`` times its own
compute time after each training), on the real stack with every service a process. The
same peers run two jobs, one after the other, with the same model, training and split:

* ``sync``: FedAvg, every round waits for all 8 peers (``BENCH_SYNC_ROUNDS``, default 10);
* ``async``: FedBuff (``aggregation.mode: async``), a version every
  ``BENCH_ASYNC_K`` (default 4) accepted updates, ``BENCH_ASYNC_ROUNDS`` versions
  (default 40), staleness weight ``1 / (1 + s) ** a``, ``a`` =
  ``BENCH_ASYNC_STALENESS_EXPONENT`` (default 0.5: FedBuff's ``1 / sqrt(1 + s)``), server step
  ``BENCH_ASYNC_SERVER_LR`` (default 0.5: with 1, the buffers of the fast peers' skewed
  shards make the model swing and drift, on the simulation as on the platform; FedBuff
  tunes its server step too), calibration ``BENCH_ASYNC_CALIBRATION`` (default ``none``;
  ``cached``: CA2FL, every shard's latest update in each version).

Both train ``BENCH_LOCAL_EPOCHS`` (default 5) local epochs per task: a peer's compute
must outweigh the platform's per-task CPU for the slowdowns to mean anything. The MLP's
task is about 95 ms of CPU against about 150 ms of the platform's (on these 2 cores: the
asynchronous job is bound by the platform, not by its peers); the CNN's is about 750 ms.

From each job's own event timestamps, from its first ``round.opened``:

* ``sync_time_to_target_s``, ``async_time_to_target_s``: to the first model version whose
  holdout accuracy (``model.evaluated``) is at least the target, the synchronous run's
  final accuracy minus 1 point;
* ``async_speedup``: their ratio; ``sync_final_accuracy``, ``async_final_accuracy``;
* ``sync_rounds_to_target``, ``async_updates_to_target`` and
  ``dedicated_speedup_estimate``: what the two curves would give on a peer machine each
  (:func:`dedicated_speedup`), without this machine's CPU contention.

Prints one JSON line last. Goal: ``async_speedup`` >= 3, final accuracies within 1 point.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "stack" / "training"))

from platform_jobs import event_time, running_platform
from training_support import (
    Platform,
    create_job,
    dataset,
    finished,
    job_events,
    mnist_csv_gz,
    mnist_png_zip,
    peers_active,
)

SLOWDOWNS = (1, 1, 2, 2, 4, 4, 8, 8)
SYNC_ROUNDS = int(os.environ.get("BENCH_SYNC_ROUNDS", "10"))
ASYNC_ROUNDS = int(os.environ.get("BENCH_ASYNC_ROUNDS", "40"))
ASYNC_K = int(os.environ.get("BENCH_ASYNC_K", "4"))
ASYNC_SERVER_LR = float(os.environ.get("BENCH_ASYNC_SERVER_LR", "0.5"))
ASYNC_STALENESS = float(os.environ.get("BENCH_ASYNC_STALENESS_EXPONENT", "0.5"))
ASYNC_CALIBRATION = os.environ.get("BENCH_ASYNC_CALIBRATION", "none")
MODELS: dict[str, dict[str, Any]] = {
    "mlp": {"arch": "mlp", "hidden": [128]},
    "cnn": {"arch": "cnn", "channels": [8, 16], "hidden": 64},
}
MODEL_NAME = os.environ.get("BENCH_ASYNC_MODEL", "cnn")
MODEL = MODELS[MODEL_NAME]
LOCAL_EPOCHS = int(os.environ.get("BENCH_LOCAL_EPOCHS", "5"))
TRAINING = {
    "local_epochs": LOCAL_EPOCHS,
    "batch_size": 32,
    "lr": 0.05,
    "optimizer": "sgd",
    "momentum": 0.9,
    "seed": 7,
}
SHARDING = {"strategy": "dirichlet", "alpha": 0.5}


def job(dataset_id: str, peers: list[str], mode: str) -> dict[str, Any]:
    """The job of one mode: the same model, training and split for both."""
    if mode == "sync":
        rounds = SYNC_ROUNDS
        aggregation: dict[str, Any] = {"min_peers": len(peers), "round_deadline_s": 900}
    else:
        rounds = ASYNC_ROUNDS
        aggregation = {
            "mode": "async",
            "buffer_size": ASYNC_K,
            "server_lr": ASYNC_SERVER_LR,
            "staleness_exponent": ASYNC_STALENESS,
            "calibration": ASYNC_CALIBRATION,
            "round_deadline_s": 900,
        }
    return {
        "name": f"bench-async-{mode}",
        "dataset_id": dataset_id,
        "peers": peers,
        "model": MODEL,
        "training": {**TRAINING, "rounds": rounds},
        "aggregation": {"strategy": "fedavg", **aggregation},
        "sharding": SHARDING,
    }


async def run_job(p: Platform, body: dict[str, Any]) -> list[tuple[float, float]]:
    """Run a job to its end; ``(seconds since its first round opened, accuracy)`` of
    each model version past 0, in order."""
    job_id = await create_job(p, body)
    ended = await finished(p, job_id, timeout=3600)
    if ended["state"] != "completed":
        raise RuntimeError(f"{body['name']} ended {ended['state']}: {ended.get('error')}")
    async with p.client() as http:
        events = await job_events(http, job_id)
    start = min(event_time(e["occurred_at"]) for e in events if e["type"] == "round.opened")
    return sorted(
        (event_time(e["occurred_at"]) - start, e["data"]["accuracy"])
        for e in events
        if e["type"] == "model.evaluated" and e["data"]["version"] > 0
    )


def time_to(curve: list[tuple[float, float]], target: float) -> float | None:
    """When ``curve`` first reaches ``target``."""
    return next((t for t, accuracy in curve if accuracy >= target), None)


def versions_to(curve: list[tuple[float, float]], target: float) -> int | None:
    """The first model version of ``curve`` (one point a version, from 1) that reaches
    ``target``."""
    return next((v for v, (_, accuracy) in enumerate(curve, 1) if accuracy >= target), None)


def dedicated_speedup(sync_rounds: int | None, async_versions: int | None) -> float | None:
    """The speedup the same two curves would give on dedicated peer machines with no
    platform time: a synchronous round takes the slowest peer's ``max(F) * c``, and
    asynchronous updates come at ``sum(1 / (F * c))`` a second (``c``: one task's compute).
    On this machine the 8 peers share 2 cores, so a peer's measured compute time (which
    its slowdown multiplies) grows with the peers training beside it: a synchronous
    round's slow peers, which start together with all the others, wait longer than on a
    machine of their own. This estimate takes that out, and keeps what the algorithm
    does: how many updates each mode needs to reach the target."""
    if not sync_rounds or not async_versions:
        return None
    sync_s = sync_rounds * max(SLOWDOWNS)
    async_s = async_versions * ASYNC_K / sum(1 / f for f in SLOWDOWNS)
    return round(sync_s / async_s, 2)


async def bench(p: Platform) -> dict[str, Any]:
    if MODEL["arch"] == "cnn":  # images: the same 10k, as a zip of PNG files
        upload = ("mnist-10k-png", "mnist.zip", await asyncio.to_thread(mnist_png_zip))
        fields = {}
    else:
        upload = ("mnist-10k", "mnist.csv.gz", await asyncio.to_thread(mnist_csv_gz))
        fields = {"label_column": "label"}
    dataset_id = await dataset(p, *upload, holdout_fraction="0.2", holdout_seed="1", **fields)
    peers = []
    for k, factor in enumerate(SLOWDOWNS):
        env = {"PEERTRAIN_PEER_SLOWDOWN": str(factor)}
        peers.append((await asyncio.to_thread(p.peer, f"x{factor}-{k}", env=env)).peer_id)
    await peers_active(p, peers)
    synced = await run_job(p, job(dataset_id, peers, "sync"))
    buffered = await run_job(p, job(dataset_id, peers, "async"))
    target = synced[-1][1] - 0.01
    sync_t, async_t = time_to(synced, target), time_to(buffered, target)
    sync_v, async_v = versions_to(synced, target), versions_to(buffered, target)
    return {
        "sync_time_to_target_s": round(sync_t, 2) if sync_t is not None else None,
        "async_time_to_target_s": round(async_t, 2) if async_t is not None else None,
        "async_speedup": round(sync_t / async_t, 2) if sync_t and async_t else None,
        "sync_final_accuracy": synced[-1][1],
        "async_final_accuracy": buffered[-1][1],
        "target_accuracy": round(target, 4),
        "sync_rounds_to_target": sync_v,
        "async_updates_to_target": async_v * ASYNC_K if async_v else None,
        "dedicated_speedup_estimate": dedicated_speedup(sync_v, async_v),
        "sync_wall_s": round(synced[-1][0], 2),
        "async_wall_s": round(buffered[-1][0], 2),
        "async_best_accuracy": max(a for _, a in buffered),
        "sync_rounds": SYNC_ROUNDS,
        "async_rounds": ASYNC_ROUNDS,
        "async_buffer_size": ASYNC_K,
        "async_server_lr": ASYNC_SERVER_LR,
        "async_staleness_exponent": ASYNC_STALENESS,
        "async_calibration": ASYNC_CALIBRATION,
        "model": MODEL_NAME,
        "local_epochs": LOCAL_EPOCHS,
        "slowdowns": list(SLOWDOWNS),
        "goal": {"async_speedup": 3, "accuracy_gap_points": 1},
        "sync_curve": [[round(t, 2), a] for t, a in synced],
        "async_curve": [[round(t, 2), a] for t, a in buffered],
    }


def main() -> None:
    with running_platform("bench-async-") as p:
        result = asyncio.run(bench(p))
        result["logs"] = str(p.base.parent)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
