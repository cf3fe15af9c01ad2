"""One bench-sim task directory through ``peertrain.sim``: prints one JSON line.

Usage: ``python benchmarks/sim/peertrain_task.py TASK_DIR [--workers N] [--cold]``

The task's data, holdout and clients' shards are taken as written (the same split as
Flower's run); clients are peers, ``clients_per_round`` is
``aggregation.peers_per_round``. The aggregation is plain FedAvg as Flower's (norm
clipping and the outlier bound off; both on by default on the platform). ``wall_s`` is
``peertrain.sim.run`` (sharding, every round with the platform's evaluation on the
holdout, the export); ``peak_rss_mb`` is this process's peak.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tasks import load_task

import peertrain.sim as sim


def job_spec(task: dict[str, Any]) -> dict[str, Any]:
    """The task as a job spec."""
    training = {k: v for k, v in task["training"].items()}
    return {
        "model": task["model"],
        "training": {**training, "rounds": task["rounds"]},
        "aggregation": {
            "strategy": "fedavg",
            "peers_per_round": task["clients_per_round"],
            "norm_clip": None,
            "norm_outlier": None,
        },
    }


def run_task(task_dir: Path, *, workers: int = 0, warmup: bool = True) -> dict[str, Any]:
    """Run one task; its figures. With ``warmup``, one round of it runs first, untimed
    (``warmup_s``): torch's lazy imports on the first optimizer (``torch._dynamo``) and
    numba's compilation of the exact fold happen once per process, not per job."""
    task, arrays = load_task(task_dir)
    rows, offsets = arrays["client_rows"], arrays["client_offsets"]
    shards = [rows[offsets[k] : offsets[k + 1]] for k in range(task["clients"])]
    data = sim.from_arrays(
        arrays["train_x"],
        arrays["train_y"],
        arrays["holdout_x"],
        arrays["holdout_y"],
        shards=shards,
    )
    spec = job_spec(task)
    warmup_s = None
    if warmup:
        started = time.perf_counter()
        one = {**spec, "training": {**spec["training"], "rounds": 1}}
        sim.run(one, data, peers=task["clients"], workers=workers)
        warmup_s = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    result = sim.run(spec, data, peers=task["clients"], workers=workers)
    wall = time.perf_counter() - started
    last = result.rounds[-1] if result.rounds else None
    return {
        "task": task["name"],
        "state": result.state,
        "wall_s": round(wall, 3),
        "warmup_s": warmup_s,
        "accuracy": last.accuracy if last else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rounds": len(result.rounds),
        "clients": task["clients"],
        "clients_per_round": task["clients_per_round"],
        "holdout_rows": int(np.asarray(arrays["holdout_y"]).shape[0]),
    }


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    workers = int(argv[argv.index("--workers") + 1]) if "--workers" in argv else 0
    print(json.dumps(run_task(Path(argv[0]), workers=workers, warmup="--cold" not in argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
