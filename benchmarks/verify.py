"""``make bench-verify``: checked work against lazy peers; one JSON line last.

8 peers on scikit-learn's digits (the anchor task's data, split and MLP: 20% held out,
IID shards, one per peer), 30 rounds, FedAvg with ``aggregation.verify`` on: 4 honest
peers and one lazy peer of each kind (``zeros``, ``replay``, ``noise``, ``tenth``; see
``peertrain.sim.peers.LAZY_MODES``), 20 runs with seeds 0..19 (the seed moves the
shards, the model's initial weights, the training and which lazy peer has which shard).

Driven through ``peertrain.sim``: it runs the platform's own ``OrchestratorApp`` and
``AggregatorApp`` (selection, checks, tie-breaks, comparisons, strikes, exclusions: the
same code) on in-memory ports and a virtual clock, with the peer runtime's training.

Fields: ``lazy_excluded_within_5_rounds`` (share of runs in which every lazy peer is
excluded before round 6 opens), ``honest_excluded`` (honest peers excluded, over all
runs), ``honest_struck`` (strikes against honest peers, over all runs),
``extra_compute_share`` (check and tie-break tasks over the other tasks assigned: the
work the job would have cost without checks),
``extra_compute_share_first_5_rounds`` (the same, rounds 1-5 only: the price while lazy
peers are around), ``lazy_excluded_round_max`` (the latest round a lazy peer was excluded
in), ``lazy_updates_aggregated`` (lazy peers' updates any version included, over all
runs), ``final_accuracy_mean``. Goals: >= 0.95, 0, <= 0.15. ``calibration_*``: the
tolerance's calibration (:func:`calibrate`): the largest relative distance between one
task trained on 1 and on 2 torch threads, and the smallest between an honest update and
a tenth-of-the-shard one, and noise of its norm.

Usage: ``python benchmarks/verify.py [--runs N] [--rounds R] [--share S] [--mode async]``
(``--mode async``: the same with asynchronous rounds, a version every 4 accepted
updates; "rounds" are then versions).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "sim"))

from tasks import ANCHOR, MODEL, TRAINING, load_task, write_task

import peertrain.sim as sim
from peertrain.common.events.models import model_key
from peertrain.common.events.training import PeerExcluded, RoundClosed, RoundOpened, TaskAssigned
from peertrain.common.specs import derive_seed
from peertrain.ml.weights.agreement import relative_distance
from peertrain.sim.peers import LAZY_MODES
from peertrain.sim.training import TaskInput, train_task

PEERS = 8
RUNS = 20
ROUNDS = 30
WITHIN = 5
SHARE = 0.02


def spec(seed: int, rounds: int, share: float, mode: str = "sync") -> dict[str, Any]:
    """The job: the anchor task's model and training, verify on; ``mode`` ``async``:
    FedBuff, a version every ``PEERS // 2`` accepted updates (``rounds`` versions)."""
    aggregation: dict[str, Any] = {"strategy": "fedavg", "min_peers": 2, "verify": {"share": share}}
    if mode == "async":
        aggregation |= {"mode": "async", "buffer_size": PEERS // 2, "server_lr": 0.5}
    return {
        "model": MODEL,
        "training": {**TRAINING, "rounds": rounds, "seed": seed},
        "aggregation": aggregation,
    }


def one_run(
    data: sim.SimData, seed: int, rounds: int, share: float, mode: str = "sync"
) -> dict[str, Any]:
    """One seeded job: who is lazy, who was excluded when, what the checks cost."""
    lazy_at = [(PEERS // 2 + (k + seed) % len(LAZY_MODES), m) for k, m in enumerate(LAZY_MODES)]
    volunteers = sim.Volunteers(hostile_modes=tuple(lazy_at), seed=seed)
    result = sim.run(
        spec(seed, rounds, share, mode), data, peers=PEERS, volunteers=volunteers, device="cpu"
    )
    peers = [f"peer-{i:05d}" for i in range(PEERS)]
    lazy = {peers[k] for k, _ in lazy_at}
    opened: dict[int, int] = {}  # round -> position of its first opening
    excluded: dict[str, int] = {}
    tasks = checks = early_tasks = early_checks = aggregated = 0
    round_now = 0
    for event in result.log.events:
        data_ = event.data
        if isinstance(data_, RoundOpened):
            round_now = data_.round
            opened.setdefault(data_.round, event.position)
        elif isinstance(data_, TaskAssigned):  # tasks: the work without checks
            tasks += data_.checks is None
            checks += data_.checks is not None
            if data_.round <= WITHIN:
                early_tasks += data_.checks is None
                early_checks += data_.checks is not None
        elif isinstance(data_, PeerExcluded):
            excluded.setdefault(data_.peer_id, round_now)
        elif isinstance(data_, RoundClosed):
            aggregated += sum(u.peer_id in lazy for u in data_.included)
    return {
        "seed": seed,
        "state": result.state,
        "accuracy": result.rounds[-1].accuracy if result.rounds else None,
        "lazy_excluded_by_round": {p: excluded.get(p) for p in sorted(lazy)},
        "honest_excluded": sorted(p for p in excluded if p not in lazy),
        "honest_struck": _honest_strikes(result, lazy),
        "lazy_updates_aggregated": aggregated,
        "tasks": tasks,
        "checks": checks,
        "early_tasks": early_tasks,
        "early_checks": early_checks,
        "wall_s": round(result.wall_s, 2),
    }


def _honest_strikes(result: sim.SimResult, lazy: set[str]) -> int:
    """Strikes the orchestrator's fold counted against honest peers (its ``Job``)."""
    from peertrain.orchestrator.domain import Job

    job = Job("sim")
    for event in result.log.events:
        if event.stream.split(":", 1)[-1] == "sim":
            job.apply(event)
    return sum(len(s) for p, s in job.strikes.items() if p not in lazy)


def calibrate(data: sim.SimData, versions: int = 3) -> dict[str, float]:
    """The tolerance's calibration: one task (a peer's shard, one local epoch) trained
    on 1 and on 2 torch threads from versions 0..``versions - 1`` of an honest 8-peer
    run (their summation orders differ), against what lazy peers send of it."""
    job = sim.parse_job_spec(spec(0, versions, 0.0))
    before = torch.get_num_threads()
    result = sim.run(job, data, peers=PEERS, device="cpu")
    assert result.blobs is not None
    honest: list[float] = []
    tenth: list[float] = []
    noise: list[float] = []
    rows = len(data.train_y) // PEERS
    x, y = data.train_x[:rows].astype("float32"), data.train_y[:rows].astype("int64")
    for v in range(versions):
        seed = derive_seed(job.training.seed, v + 1, 0)

        def task(cut: int, v: int = v, seed: int = seed) -> TaskInput:
            return TaskInput(
                model_bytes=result.blobs.objects[model_key("sim", v)],  # type: ignore[union-attr]
                x=x[:cut],
                y=y[:cut],
                model_spec=job.model,
                feature_spec=data.feature_spec,
                training=job.training,
                seed=seed,
                round=v + 1,
                device="cpu",
            )

        one = train_task(task(rows), threads=1).delta
        two = train_task(task(rows), threads=2).delta
        honest.append(relative_distance(one, two))
        tenth.append(relative_distance(one, train_task(task(rows // 10), threads=1).delta))
        g = torch.Generator().manual_seed(v)
        rnd = {k: torch.randn(t.shape, generator=g) for k, t in one.items()}
        scale = _norm(one) / _norm(rnd)
        noise.append(relative_distance(one, {k: t * scale for k, t in rnd.items()}))
    torch.set_num_threads(before)
    return {
        "calibration_honest_distance_max": max(honest),
        "calibration_tenth_distance_min": round(min(tenth), 4),
        "calibration_noise_distance_min": round(min(noise), 4),
    }


def _norm(state: dict[str, torch.Tensor]) -> float:
    return math.sqrt(float(sum(t.double().square().sum() for t in state.values())))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--share", type=float, default=SHARE)
    parser.add_argument("--mode", choices=("sync", "async"), default="sync")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        task, arrays = load_task(write_task({**ANCHOR, "clients": PEERS}, Path(tmp) / "t"))
    del task
    data = sim.from_arrays(
        arrays["train_x"], arrays["train_y"], arrays["holdout_x"], arrays["holdout_y"]
    )
    calibration = calibrate(data)
    print(json.dumps(calibration), file=sys.stderr, flush=True)
    runs = []
    for seed in range(args.runs):
        run = one_run(data, seed, args.rounds, args.share, args.mode)
        runs.append(run)
        print(json.dumps(run), file=sys.stderr, flush=True)
    caught = [
        all(r is not None and r <= WITHIN for r in run["lazy_excluded_by_round"].values())
        for run in runs
    ]
    latest = [r for run in runs for r in run["lazy_excluded_by_round"].values() if r is not None]
    print(
        json.dumps(
            {
                "bench": "verify",
                "mode": args.mode,
                "runs": len(runs),
                "peers": PEERS,
                "rounds": args.rounds,
                "share": args.share,
                "lazy_excluded_within_5_rounds": sum(caught) / len(runs),
                "honest_excluded": sum(len(run["honest_excluded"]) for run in runs),
                "honest_struck": sum(run["honest_struck"] for run in runs),
                "extra_compute_share": round(
                    sum(r["checks"] for r in runs) / sum(r["tasks"] for r in runs), 4
                ),
                "extra_compute_share_first_5_rounds": round(
                    sum(r["early_checks"] for r in runs) / sum(r["early_tasks"] for r in runs), 4
                ),
                "lazy_excluded_round_max": max(latest) if latest else None,
                "lazy_updates_aggregated": sum(r["lazy_updates_aggregated"] for r in runs),
                "lazy_never_excluded": sum(
                    r is None for run in runs for r in run["lazy_excluded_by_round"].values()
                ),
                "completed": sum(run["state"] == "completed" for run in runs),
                "final_accuracy_mean": round(mean(r["accuracy"] or 0.0 for r in runs), 4),
                **calibration,
                "wall_s": round(time.perf_counter() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
