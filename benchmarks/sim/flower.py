"""Benchmark: bench-sim's two tasks on Flower 1.42's simulation engine (Ray).

Writes the tasks (``benchmarks/sim/tasks.py``: the anchor task, then 1,000 clients with
100 per round for 10 rounds on MNIST 10k, Dirichlet(0.5)), then runs each in the
separate Flower environment (``deploy/local/flower-venv.sh``, built or reused here) as a
subprocess, ``benchmarks/sim/flower_task.py``. :func:`run_flower` is what ``make
bench-sim`` calls for its Flower side; it needs no stack.

Prints one JSON line last: ``flower_anchor_wall_s``, ``flower_anchor_accuracy``,
``flower_many_wall_s``, ``flower_many_peak_rss_mb``, ``flower_many_accuracy``, and
besides ``flower_*_ray_start_s`` (``ray.init``, outside the wall time),
``flower_anchor_peak_rss_mb`` and each task's rounds. A task that fails or runs past
``BENCH_FLOWER_TIMEOUT_S`` (default 1800) gives ``null`` figures and a
``flower_<task>_error``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tasks import write_tasks

ROOT = Path(__file__).resolve().parents[2]
TASK_SCRIPT = Path(__file__).resolve().parent / "flower_task.py"
TIMEOUT_S = float(os.environ.get("BENCH_FLOWER_TIMEOUT_S", "1800"))


class FlowerFailed(RuntimeError):
    """A Flower run ended without its JSON line."""


def flower_venv() -> Path:
    """The Flower environment, built the first time (``deploy/local/flower-venv.sh``)."""
    out = subprocess.run(
        ["bash", str(ROOT / "deploy" / "local" / "flower-venv.sh")],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return Path(out.stdout.strip().splitlines()[-1])


def run_flower(
    task_dir: Path, *, venv: Path | None = None, timeout_s: float = TIMEOUT_S
) -> dict[str, Any]:
    """Run one task directory on Flower's simulation engine; its figures.

    Returns the JSON line of ``flower_task.py``: ``wall_s``, ``ray_start_s``,
    ``accuracy``, ``peak_rss_mb``, ``rounds`` and the task's shape.

    Raises
    ------
    FlowerFailed
        When the run exits non-zero, prints no JSON line, or runs past ``timeout_s``
        (the message carries the tail of Flower's log).
    """
    python = (venv or flower_venv()) / "bin" / "python"
    # Only the Flower venv's own packages: not the project's PYTHONPATH (env.sh's).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # Its own process group: on a timeout Ray's processes (GCS, raylet, workers) go too.
    with subprocess.Popen(
        [str(python), str(TASK_SCRIPT), str(task_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired as e:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise FlowerFailed(f"{task_dir.name}: over {timeout_s:.0f} s") from e
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = "\n".join(stderr.splitlines()[-20:])
        raise FlowerFailed(f"{task_dir.name}: exit {proc.returncode}\n{tail}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main() -> None:
    venv = flower_venv()
    base = Path(tempfile.mkdtemp(prefix="bench-flower-"))
    out: dict[str, Any] = {}
    for name, task_dir in write_tasks(base).items():
        print(f"flower: {name} ...", file=sys.stderr, flush=True)
        try:
            r = run_flower(task_dir, venv=venv)
        except FlowerFailed as e:
            print(str(e), file=sys.stderr)
            out |= {f"flower_{name}_{k}": None for k in ("wall_s", "accuracy", "peak_rss_mb")}
            out[f"flower_{name}_error"] = str(e).splitlines()[0]
            continue
        print(f"flower: {name}: {json.dumps(r)}", file=sys.stderr, flush=True)
        for key in ("wall_s", "accuracy", "peak_rss_mb", "ray_start_s", "rounds"):
            out[f"flower_{name}_{key}"] = r.get(key)
        out |= {
            "flower_ray_actors": r.get("ray_actors"),
            "flwr": r.get("flwr"),
            "ray": r.get("ray"),
        }
    out["tasks"] = str(base)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
