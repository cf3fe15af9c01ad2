"""What the benchmarks that run jobs on the platform share: the end-to-end tests'
platform as a context manager, a job's per-round timings from its events and metrics,
and its training data read back from the bucket.

A benchmark imports it as ``platform_jobs`` (``python benchmarks/<name>.py`` puts this
folder first on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import tempfile
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "stack" / "training"))

from training_support import Platform, run_platform

__all__ = [
    "by_round",
    "event_time",
    "peer_compute",
    "running_platform",
]


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


@contextlib.contextmanager
def running_platform(prefix: str, *, instances: int = 1) -> Iterator[Platform]:
    """The end-to-end tests' platform (every service a process, a logged-in user), its
    logs under a new temporary folder named ``prefix...`` (``platform.base.parent``);
    ``instances`` orchestrators and aggregators, jobs spread over them by leases."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    factory = _Factory(base)
    # Stopped by a signal (``timeout``, a kill), Python exits without running ``finally``:
    # the services and peers went on, and the run's queues stayed bound to the broker's
    # exchanges, filled up, and refused every later publish of the peers (a stall of
    # every later run on the same stack). As an exit, the platform is stopped and its
    # queues deleted.
    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        gen = run_platform(uuid.uuid4().hex[:8], factory, instances=instances)  # type: ignore[arg-type]
        platform = next(gen)
        try:
            yield platform
        finally:
            gen.close()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def event_time(value: str) -> float:
    """An event's ``occurred_at`` as a POSIX timestamp."""
    return datetime.fromisoformat(value).timestamp()


def by_round(events: list[dict[str, Any]], kind: str, key: str = "round") -> dict[int, float]:
    """When each event of type ``kind`` occurred, by its ``data[key]``; the last one wins
    (a round opened again below ``min_peers`` counts from its last opening)."""
    return {e["data"][key]: event_time(e["occurred_at"]) for e in events if e["type"] == kind}


def peer_compute(metrics: dict[str, Any]) -> dict[int, dict[str, float]]:
    """Per round, each peer's compute: the sum of the epoch durations it reported
    (``GET /api/jobs/{id}/metrics``, ``peers``)."""
    compute: dict[int, dict[str, float]] = {}
    for m in metrics["peers"]:
        per_peer = compute.setdefault(m["round"], {})
        per_peer[m["peer_id"]] = per_peer.get(m["peer_id"], 0.0) + m["duration_s"]
    return compute
