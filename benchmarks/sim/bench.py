"""``make bench-sim``: bench-sim's two tasks on PeerTrain's simulation and on Flower's.

Writes the tasks once (``tasks.py``: the anchor task; 1,000 MNIST clients, 100 per
round, 10 rounds, Dirichlet(0.5)), runs each through ``peertrain.sim`` in a fresh
process (``peertrain_task.py``: its peak RSS is its own) and on Flower 1.42's simulation
engine (``flower.run_flower``, its own venv), on the very same split.

Prints one JSON line last: ``anchor_wall_s``, ``anchor_accuracy``,
``flower_anchor_wall_s``, ``flower_anchor_accuracy``, ``many_wall_s``,
``many_peak_rss_mb``, ``many_accuracy``, ``flower_many_wall_s``,
``flower_many_peak_rss_mb``, ``flower_many_accuracy``, plus ``anchor_speedup``
(Flower's wall over PeerTrain's), each side's warm-up / Ray start and errors.
``BENCH_SIM_FLOWER=0`` skips Flower (its figures are then ``null``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from flower import FlowerFailed, flower_venv, run_flower
from tasks import write_tasks

TASK_SCRIPT = Path(__file__).resolve().parent / "peertrain_task.py"


def run_peertrain(task_dir: Path) -> dict[str, Any]:
    """One task through ``peertrain.sim`` in its own process; its JSON line."""
    out = subprocess.run(
        [sys.executable, str(TASK_SCRIPT), str(task_dir)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-sim-"))
    tasks = write_tasks(base)
    with_flower = os.environ.get("BENCH_SIM_FLOWER", "1") != "0"
    venv = flower_venv() if with_flower else None
    out: dict[str, Any] = {}
    for name, task_dir in tasks.items():
        print(f"peertrain: {name} ...", file=sys.stderr, flush=True)
        mine = run_peertrain(task_dir)
        print(f"peertrain: {name}: {json.dumps(mine)}", file=sys.stderr, flush=True)
        for key in ("wall_s", "accuracy", "peak_rss_mb", "warmup_s", "state"):
            out[f"{name}_{key}"] = mine.get(key)
        theirs: dict[str, Any] = {}
        if venv is not None:
            print(f"flower: {name} ...", file=sys.stderr, flush=True)
            try:
                theirs = run_flower(task_dir, venv=venv)
            except FlowerFailed as e:
                print(str(e), file=sys.stderr)
                out[f"flower_{name}_error"] = str(e).splitlines()[0]
            print(f"flower: {name}: {json.dumps(theirs)}", file=sys.stderr, flush=True)
        for key in ("wall_s", "accuracy", "peak_rss_mb", "ray_start_s"):
            out[f"flower_{name}_{key}"] = theirs.get(key)
    mine_s, theirs_s = out.get("anchor_wall_s"), out.get("flower_anchor_wall_s")
    out["anchor_speedup"] = round(theirs_s / mine_s, 1) if mine_s and theirs_s else None
    out["tasks"] = str(base)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
