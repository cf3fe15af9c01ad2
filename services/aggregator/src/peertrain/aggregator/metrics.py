"""The aggregator's Prometheus metrics (labels stay bounded: no job or peer ids)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "AGGREGATION_SECONDS",
    "EVALUATION_SECONDS",
    "LAST_ACCURACY",
    "MODEL_VERSIONS",
    "UPDATES",
]

UPDATES = Counter(
    "peertrain_aggregator_updates_total",
    "Announced updates by outcome (accepted, rejected, duplicate, ignored) and code",
    ["outcome", "code"],
)
AGGREGATION_SECONDS = Histogram(
    "peertrain_aggregator_round_seconds",
    "Time to turn a closed round into a stored model version",
    ["path"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
)
EVALUATION_SECONDS = Histogram(
    "peertrain_aggregator_evaluation_seconds",
    "Time to evaluate a model version on its job's holdout",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
LAST_ACCURACY = Gauge(
    "peertrain_aggregator_last_accuracy",
    "Holdout accuracy of the most recently evaluated model version (any job)",
)
MODEL_VERSIONS = Counter(
    "peertrain_aggregator_model_versions_total", "Model versions stored", ["kind"]
)
