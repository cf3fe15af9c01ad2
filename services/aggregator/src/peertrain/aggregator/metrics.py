"""The aggregator's Prometheus metrics.

Labels stay bounded: never peer ids. Job ids appear only on the per-job training
gauges (``peertrain_job_*``), and only for the :data:`RECENT_JOBS` jobs evaluated most
recently: older jobs' series are removed, so a job's curve stays in Prometheus' history
while the number of live series never grows with the number of jobs.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict

from prometheus_client import Counter, Gauge, Histogram

from peertrain.common.events.models import UpdateAccepted

__all__ = [
    "AGGREGATION_SECONDS",
    "EVALUATION_SECONDS",
    "JOB_ACCURACY",
    "JOB_LOSS",
    "JOB_ROUND_BYTES",
    "JOB_VERSION",
    "LAST_ACCURACY",
    "MODEL_VERSIONS",
    "RECENT_JOBS",
    "ROUND_BYTES",
    "ROUND_INPUTS_MISSING",
    "UPDATES",
    "UPDATE_BYTES",
    "UPDATE_DENSE_BYTES",
    "observe_evaluation",
    "observe_round_bytes",
    "observe_update_bytes",
]

RECENT_JOBS = 20

UPDATES = Counter(
    "peertrain_aggregator_updates_total",
    "Announced updates by outcome (accepted, rejected, duplicate, ignored, passed_on: "
    "handed back to the queue for the job's holder) and code",
    ["outcome", "code"],
)
UPDATE_BYTES = Counter(
    "peertrain_aggregator_update_bytes_total",
    "Bytes of accepted updates (safetensors objects, as uploaded) by the job's compression",
    ["compression"],
)
UPDATE_DENSE_BYTES = Counter(
    "peertrain_aggregator_update_dense_bytes_total",
    "Bytes the accepted updates' tensors would have weighed in float32, by compression",
    ["compression"],
)
ROUND_BYTES = Histogram(
    "peertrain_aggregator_round_update_bytes",
    "Bytes of the updates a stored model version was aggregated from",
    buckets=tuple(float(4**i * 1024) for i in range(12)),  # 1 KiB .. 4 GiB
)
AGGREGATION_SECONDS = Histogram(
    "peertrain_aggregator_round_seconds",
    "Time to turn a closed round into a stored model version, by how it was made "
    "(early: before the close; running: the running sum; clipped; rebuilt: from the bucket)",
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

ROUND_INPUTS_MISSING = Counter(
    "peertrain_aggregator_round_inputs_missing_total",
    "Accepted updates gone or changed in the bucket when their round was aggregated "
    "(the round is aggregated without them)",
)

JOB_LOSS = Gauge(
    "peertrain_job_loss", "Holdout loss of the job's latest evaluated version", ["job_id"]
)
JOB_ACCURACY = Gauge(
    "peertrain_job_accuracy", "Holdout accuracy of the job's latest evaluated version", ["job_id"]
)
JOB_VERSION = Gauge(
    "peertrain_job_model_version",
    "The job's latest evaluated model version (the round it closed; 0: the seed)",
    ["job_id"],
)
JOB_ROUND_BYTES = Gauge(
    "peertrain_job_round_update_bytes",
    "Bytes of the updates the job's latest model version was aggregated from",
    ["job_id"],
)

_PER_JOB = (JOB_LOSS, JOB_ACCURACY, JOB_VERSION, JOB_ROUND_BYTES)
_recent: OrderedDict[str, None] = OrderedDict()


def _touch(job_id: str) -> None:
    """Mark ``job_id`` recent; drop the series of jobs beyond :data:`RECENT_JOBS`."""
    _recent[job_id] = None
    _recent.move_to_end(job_id)
    while len(_recent) > RECENT_JOBS:
        old, _ = _recent.popitem(last=False)
        for gauge in _PER_JOB:
            with contextlib.suppress(KeyError):
                gauge.remove(old)


def observe_evaluation(job_id: str, version: int, loss: float, accuracy: float) -> None:
    """Record a model version's holdout metrics (per job, and as the last accuracy)."""
    _touch(job_id)
    JOB_LOSS.labels(job_id=job_id).set(loss)
    JOB_ACCURACY.labels(job_id=job_id).set(accuracy)
    JOB_VERSION.labels(job_id=job_id).set(version)
    LAST_ACCURACY.set(accuracy)


def observe_round_bytes(job_id: str, nbytes: int) -> None:
    """Record the bytes of updates a new round version was aggregated from."""
    _touch(job_id)
    ROUND_BYTES.observe(nbytes)
    JOB_ROUND_BYTES.labels(job_id=job_id).set(nbytes)


def observe_update_bytes(accepted: UpdateAccepted) -> None:
    """Count an accepted update's bytes as uploaded and as float32 would have been."""
    kind = accepted.compression or "none"
    UPDATE_BYTES.labels(compression=kind).inc(accepted.size)
    if accepted.dense_size is not None:
        UPDATE_DENSE_BYTES.labels(compression=kind).inc(accepted.dense_size)
