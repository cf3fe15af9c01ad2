"""Benchmark: what the whole platform costs in CPU while nothing happens.

Every service up (started with ``deploy/local/services.sh up`` when not running
already) and no job running: after ``--settle`` seconds (10), the CPU time of each
component over ``--window`` seconds (60), from ``/proc/<pid>/stat`` (user + system, with
the children each process has reaped). A component is its server process with every
process of its process group and of its process tree: RabbitMQ's ``beam.smp`` and its
helpers, PostgreSQL's postmaster and backends, FerretDB, MinIO, the nginx gateway and
its workers, Prometheus (``deploy/local/stack.sh pid NAME``), and the five services
(``services.sh``'s pid files). The services this run started are stopped at the end;
the stack is left running.

Prints one JSON line last: ``platform_cpu_cores`` (CPU seconds of all components
over wall seconds), ``per_component`` (the same per component), ``goal`` 0.05.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from cpu import processes

from peertrain.testkit.common import PLATFORM_PORTS, platform_services, port_holder

ROOT = Path(__file__).resolve().parents[1]
STACK = ["rabbitmq", "postgres", "ferretdb", "minio", "gateway", "prometheus"]
GOAL = 0.05


def log(message: str) -> None:
    print(f"[idle] {message}", file=sys.stderr, flush=True)


def stack_pid(name: str) -> int:
    """The component's server pid (``stack.sh pid NAME``); exits when it is down."""
    done = subprocess.run(
        ["bash", str(ROOT / "deploy/local/stack.sh"), "pid", name],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{name} is not running: `make stack-up` first")
    return int(done.stdout.strip())


def cpu_seconds(root: int, table: dict[int, tuple[int, int, float]]) -> float:
    """CPU seconds of ``root``'s process group and process tree (each process once).

    A process that ended was reaped by its parent, whose children's times then hold its
    own, so the sum over the living stays whole.
    """
    if root not in table:
        return 0.0
    group = table[root][1]
    members = {p for p, (_, g, _) in table.items() if g == group and g != os.getpgrp()}
    members.add(root)
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in members:
                members.add(child)
                todo.append(child)
    return sum(table[p][2] for p in members)


def services_up(running: dict[str, int]) -> None:
    """Start the services that are not ``running`` (refused when another run holds a port)."""
    missing = [s for s in PLATFORM_PORTS if s not in running]
    for name in missing:
        holder = port_holder(PLATFORM_PORTS[name])
        if holder is not None:
            raise SystemExit(holder.refusal(name))
    if missing:
        log(f"starting {', '.join(missing)} (deploy/local/services.sh up)")
        subprocess.run(["bash", str(ROOT / "deploy/local/services.sh"), "up"], check=True)
    else:
        log("every service runs already (make up / make demo): measuring them as they are")


def stop(pids: dict[str, int], timeout: float = 20.0) -> None:
    """SIGTERM the services this run started, as ``services.sh down`` does."""
    for name, pid in pids.items():
        log(f"stopping {name} (pid {pid})")
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for pid in pids.values():
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--window", type=float, default=60.0)
    args = parser.parse_args()

    roots = {name: stack_pid(name) for name in STACK}
    running = platform_services()
    try:
        services_up(running)
        roots.update(platform_services())
        log(f"settling {args.settle:g}s, then measuring {args.window:g}s")
        time.sleep(args.settle)
        before, t0 = processes(), time.monotonic()
        time.sleep(args.window)
        after, t1 = processes(), time.monotonic()
    finally:  # what this run started, also when starting failed halfway
        stop({n: pid for n, pid in platform_services().items() if n not in running})
    wall = t1 - t0
    gone = [name for name, pid in roots.items() if pid not in after]
    if gone:
        raise SystemExit(f"{', '.join(gone)} stopped during the measurement")
    per = {
        name: (cpu_seconds(pid, after) - cpu_seconds(pid, before)) / wall
        for name, pid in roots.items()
    }
    for name, cores in sorted(per.items(), key=lambda x: -x[1]):
        log(f"{name:<13} {cores:.4f} cores")
    result = {
        "benchmark": "idle",
        "platform_cpu_cores": round(sum(per.values()), 4),
        "per_component": {name: round(cores, 4) for name, cores in per.items()},
        "goal": GOAL,
        "window_s": round(wall, 1),
        "settle_s": args.settle,
        "services_started_here": sorted(set(roots) - set(STACK) - set(running)),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
