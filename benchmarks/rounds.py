"""Benchmark: the anchor task on the real platform, on a small and on a large event log.

scikit-learn's digits (uploaded as CSV, 20% held out), 4 real peers, an MLP 64-128-10
(the zoo's ``mlp`` with ``hidden: [128]``), SGD lr 0.05 without momentum, batch 32, 1
local epoch, 30 rounds, FedAvg, through the gateway on the local stack with every
service running as a process (the end-to-end tests' platform), with 2 orchestrators and 2
aggregators (``BENCH_INSTANCES`` of each, default 2: the job's holders are whichever
instances take its leases).
The job runs twice: on the log as the platform left it, then after the log was
pre-filled with ``BENCH_PREFILL`` events (default 1,000,000; ``0`` skips the second job; see
``peertrain.testkit.common.prefill``).

From each job's own event timestamps:

* ``round_to_round_p50_ms``: from one ``round.opened`` to the next; the median.
* ``round_overhead_p50_ms``: per round, wall time from ``round.opened`` to
  ``round.closed`` minus the slowest peer's compute (the sum of its reported epoch
  durations in that round); the median over rounds.
* ``rounds_wall_s``: from the first ``round.opened`` to the last ``round.closed``.
* ``final_accuracy``: the holdout accuracy of the last model version.
* ``time_to_target_s``: from ``job.created`` to the first model version whose holdout
  accuracy is >= 0.95 (``model.evaluated``).
* ``cpu_ms_per_round``: the CPU time every process of the platform (services, peers,
  RabbitMQ, FerretDB, PostgreSQL, MinIO, the gateway, Prometheus) spent from the first
  ``round.opened`` to the last ``round.closed``, per round (``/proc``, sampled every
  0.25 s); ``cpu_ms_per_round_by_component``, the same per component; and
  ``platform_cpu_cores``, that CPU time over the wall time: on a machine of ``C`` cores
  a round takes at least ``cpu_ms_per_round / C``.

The same figures of the second job are prefixed ``prefilled_``. Over both jobs, from the
instances' ``/metrics``: ``task_sends_per_task`` (task messages the orchestrators sent per
``task.assigned``: 1 when no task is sent twice) and ``aggregation_paths`` (the
aggregators' model versions by path: ``running`` when the round's running sum was
complete at its close, ``rebuilt`` when it was read again from the bucket), and the
event log's contention per task, by service: ``<service>_append_conflicts_per_task``
(appends refused because another instance had moved the stream: read on and tried
again) and ``<service>_position_claims_lost_per_task`` (global positions another process
claimed first). Besides,
``centralized_time_to_target_s``: the same model, optimiser and budget trained in this
process on all the training data (the union of the shards), evaluated after each
epoch, until the same target.

Prints one JSON line last. Goal: ``round_to_round_p50_ms`` <= 100 and
``round_overhead_p50_ms`` <= 60, on both logs.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import load_digits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "stack" / "training"))

from cpu import CpuSampler
from platform_jobs import by_round, event_time, peer_compute, running_platform
from pymongo import AsyncMongoClient
from training_support import (
    Platform,
    create_job,
    dataset,
    finished,
    instances_metric,
    job_arrays,
    job_events,
    peers_active,
)

from peertrain.common.settings import ServiceSettings
from peertrain.ml.training import evaluate, train_local
from peertrain.ml.zoo import build_model
from peertrain.testkit.common.prefill import prefill, stderr_progress

TARGET = 0.95
ROUNDS = 30
PEERS = 4
MODEL = {"arch": "mlp", "hidden": [128]}
TRAINING = {
    "rounds": ROUNDS,
    "local_epochs": 1,
    "batch_size": 32,
    "lr": 0.05,
    "optimizer": "sgd",
    "momentum": 0.0,
    "seed": 3,
}
PREFILL = int(os.environ.get("BENCH_PREFILL", "1000000"))
INSTANCES = int(os.environ.get("BENCH_INSTANCES", "2"))
PATHS = ("early", "running", "rebuilt", "clipped")
"""Orchestrators and aggregators the platform runs (jobs spread over them by leases)."""


def digits_csv() -> bytes:
    digits = load_digits()
    out = io.StringIO()
    out.write("label," + ",".join(f"p{i}" for i in range(64)) + "\n")
    table = np.concatenate([digits.target[:, None], digits.data.astype(int)], axis=1)
    np.savetxt(out, table, fmt="%d", delimiter=",")
    return out.getvalue().encode()


def _p50(values: list[float]) -> float:
    return round(statistics.median(values), 1)


async def federated(p: Platform, name: str, cpu: CpuSampler) -> dict[str, Any]:
    """Run the anchor task once; its figures (and its ``config``)."""
    dataset_id = await dataset(
        p, "digits", "digits.csv", digits_csv(), label_column="label", holdout_fraction="0.2"
    )
    peers = [p.peer(f"b{i}").peer_id for i in range(PEERS)]
    await peers_active(p, peers)
    body = {
        "name": name,
        "dataset_id": dataset_id,
        "peers": peers,
        "model": MODEL,
        "training": TRAINING,
        "aggregation": {"strategy": "fedavg", "min_peers": PEERS, "round_deadline_s": 120},
        "sharding": {"strategy": "iid"},
    }
    job_id = await create_job(p, body)
    job = await finished(p, job_id, timeout=1200)
    if job["state"] != "completed":
        raise RuntimeError(f"the job ended {job['state']}: {job.get('error')}")
    async with p.client() as http:
        events = await job_events(http, job_id)
        metrics = (await http.get(f"/api/jobs/{job_id}/metrics")).json()
        config = (await http.get(f"/api/jobs/{job_id}/config")).json()
    if trace := os.environ.get("BENCH_ROUNDS_TRACE"):  # the job's events, to study a round
        await asyncio.to_thread(Path(trace).write_text, json.dumps(events, indent=1))
    created = next(event_time(e["occurred_at"]) for e in events if e["type"] == "job.created")
    opened = by_round(events, "round.opened")
    closed = by_round(events, "round.closed")
    compute = peer_compute(metrics)
    overheads = [
        (closed[r] - opened[r] - max(compute.get(r, {"": 0.0}).values())) * 1000
        for r in sorted(closed)
        if r in opened
    ]
    reached = [
        event_time(e["occurred_at"])
        for e in events
        if e["type"] == "model.evaluated" and e["data"]["accuracy"] >= TARGET
    ]
    round_walls = [(closed[r] - opened[r]) * 1000 for r in sorted(closed) if r in opened]
    round_to_round = [(opened[r + 1] - opened[r]) * 1000 for r in sorted(opened) if r + 1 in opened]
    start, end = min(opened.values()), max(closed.values())
    spent = {k: v for k, v in cpu.between(start, end).items() if k != "other"}
    by_cost = sorted(spent.items(), key=lambda kv: -kv[1])
    return {
        "tasks": sum(1 for e in events if e["type"] == "task.assigned"),
        "round_to_round_p50_ms": _p50(round_to_round),
        "round_overhead_p50_ms": _p50(overheads),
        "rounds_wall_s": round(max(closed.values()) - min(opened.values()), 2),
        "final_accuracy": metrics["rounds"][-1]["accuracy"],
        "round_overhead_p90_ms": round(sorted(overheads)[int(0.9 * (len(overheads) - 1))], 1),
        "round_wall_p50_ms": _p50(round_walls),
        "time_to_target_s": round(min(reached) - created, 2) if reached else None,
        "cpu_ms_per_round": round(sum(spent.values()) * 1000 / len(closed), 1),
        "cpu_ms_per_round_by_component": {k: round(v * 1000 / len(closed), 1) for k, v in by_cost},
        "platform_cpu_cores": round(sum(spent.values()) / cpu.window_s(start, end), 2),
        "config": config,
    }


def instance_figures(p: Platform, tasks: int) -> dict[str, Any]:
    """What the instances' ``/metrics`` say about sends, aggregation paths and the log's
    contention."""
    sent = instances_metric(p, "orchestrator", "peertrain_tasks_dispatched_total", kind="task")
    made = "peertrain_aggregator_round_seconds_count"
    paths = {path: int(instances_metric(p, "aggregator", made, path=path)) for path in PATHS}
    contention = {}
    for service in ("orchestrator", "aggregator"):
        conflicts = instances_metric(p, service, "peertrain_append_conflicts_total")
        lost = instances_metric(p, service, "peertrain_position_claims_lost_total")
        contention[f"{service}_append_conflicts_per_task"] = _per(conflicts, tasks)
        contention[f"{service}_position_claims_lost_per_task"] = _per(lost, tasks)
    return {
        "task_sends_per_task": _per(sent, tasks),
        "aggregation_paths": {path: n for path, n in paths.items() if n},
        **contention,
    }


def _per(count: float, tasks: int) -> float | None:
    return round(count / tasks, 3) if tasks else None


async def prefill_log(p: Platform, count: int) -> float:
    """Pre-fill the platform's event log to ``count`` events; the seconds it took."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        ServiceSettings().mongo_url, tz_aware=True
    )
    started = time.perf_counter()
    try:
        await prefill(client[p.mongo_db], count, progress=stderr_progress())
    finally:
        await client.close()
    return time.perf_counter() - started


async def centralized(p: Platform, config: dict[str, Any]) -> float | None:
    x, y, hx, hy = await job_arrays(p, config)
    start = time.perf_counter()
    model = build_model(MODEL, config["feature_spec"], seed=TRAINING["seed"])
    for epoch in range(ROUNDS):
        params = {**TRAINING, "local_epochs": 1}
        train_local(model, x, y, params, seed=epoch, device="cpu", threads=1)
        if evaluate(model, hx, hy, device="cpu")["accuracy"] >= TARGET:
            return time.perf_counter() - start
    return None


def main() -> None:
    prefilled: dict[str, Any] = {}
    prefill_s = None
    with running_platform("bench-rounds-", instances=INSTANCES) as p, CpuSampler() as cpu:
        fed = asyncio.run(federated(p, "bench-rounds", cpu))
        config = fed.pop("config")
        tasks = fed.pop("tasks")
        central = asyncio.run(centralized(p, config))
        if PREFILL:
            prefill_s = asyncio.run(prefill_log(p, PREFILL))
            again = asyncio.run(federated(p, "bench-rounds-prefilled", cpu))
            again.pop("config")
            tasks += again.pop("tasks")
            prefilled = {f"prefilled_{k}": v for k, v in again.items()}
        instances = instance_figures(p, tasks)
    result = {
        **fed,
        "centralized_time_to_target_s": round(central, 3) if central is not None else None,
        **prefilled,
        **instances,
        "prefilled_events": PREFILL,
        "prefill_s": round(prefill_s, 1) if prefill_s is not None else None,
        "target_accuracy": TARGET,
        "rounds": ROUNDS,
        "peers": PEERS,
        "instances": INSTANCES,
        "model": "mlp 64-128-10",
        "goal": {"round_to_round_p50_ms": 100, "round_overhead_p50_ms": 60},
        "logs": str(p.base.parent),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
