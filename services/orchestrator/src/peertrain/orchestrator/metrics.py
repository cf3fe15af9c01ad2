"""The orchestrator's Prometheus metrics (label values stay bounded: no job ids)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "JOBS",
    "JOBS_FINISHED",
    "ROUNDS_CLOSED",
    "ROUND_DURATION",
    "ROUND_PEERS",
    "TASKS",
    "TASKS_DISPATCHED",
]

JOBS = Gauge(
    "peertrain_jobs",
    "Jobs known to the orchestrator, by state (every instance knows every job: take the max)",
    ["state"],
)
JOBS_FINISHED = Counter("peertrain_jobs_finished_total", "Jobs that ended, by outcome", ["state"])
ROUNDS_CLOSED = Counter(
    "peertrain_rounds_total", "Round attempts that ended, by outcome", ["outcome", "reason"]
)
ROUND_DURATION = Histogram(
    "peertrain_round_duration_seconds",
    "Wall time from round.opened to round.closed",
    buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600),
)
ROUND_PEERS = Histogram(
    "peertrain_round_participants",
    "Accepted updates a closed round aggregated",
    buckets=(1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128),
)
TASKS = Counter("peertrain_tasks_total", "Task events, by kind", ["kind"])
TASKS_DISPATCHED = Counter(
    "peertrain_tasks_dispatched_total", "Messages sent to peers, by kind", ["kind"]
)
