"""A finished job as an experiment-tracking run: what ``peertrain job export --mlflow``
logs, decided from the API's answers alone (no MLflow here, no I/O).

- **params**: the job's whole spec, flattened (``model.hidden``, ``training.lr``,
  ``aggregation.strategy``, ``sharding.alpha``, ..., plus ``name``, ``dataset_id``,
  ``rounds`` and ``peers``); lists as JSON. A layer graph's ``nodes`` are no param (the
  graph is an artifact, ``model/graph.json``): ``model.layers`` counts them, and with the
  job's architecture summary (``GET /api/jobs/{id}/model``) ``model.parameters`` and
  ``model.layers`` are the model's as built, for every kind of model. A value longer than
  MLflow takes (:data:`MAX_PARAM_CHARS`) is replaced by a note of its length (the whole
  spec is in the ``job.json`` artifact).
- **metrics**, with the round as the step: the holdout ``loss`` and ``accuracy`` of
  each model version (step 0: the initial model), ``holdout_samples``,
  ``round_duration_s``, ``round_peers`` (updates accepted), ``class_accuracy/<class>``;
  per peer, ``peer/<id>/train_loss``, ``train_accuracy``, ``samples`` and
  ``duration_s`` of its last local epoch in each round. Each local epoch also goes to
  ``peer/<id>/epoch_train_loss`` and ``epoch_train_accuracy``, stepped by epochs done
  since the job began (``(round - 1) * epochs + epoch``).
- **tags**: ``peertrain.job_id``, ``peertrain.state``, ``peertrain.dataset_id``,
  ``peertrain.final_version``, ``peertrain.api``.

Where it goes, any tracking URI MLflow takes (:func:`store_kind`): a tracking server
(``http(s)://``), a database (``sqlite:///mlflow.db``, ``postgresql://...``) or a folder
(``file:///...`` or a path).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from .errors import ClientError
from .jobs import TERMINAL_STATES

__all__ = [
    "JOB_ID_TAG",
    "MAX_PARAM_CHARS",
    "RUN_STATUS",
    "SPEC_FIELDS",
    "Point",
    "StoreKind",
    "TrackedRun",
    "flatten",
    "metric_key",
    "peer_points",
    "round_points",
    "spec_params",
    "store_kind",
    "tracked_run",
]

JOB_ID_TAG = "peertrain.job_id"
SPEC_FIELDS = (
    "name",
    "dataset_id",
    "rounds",
    "peers",
    "model",
    "training",
    "aggregation",
    "sharding",
)
"""The fields of ``GET /api/jobs/{id}`` that make the job's spec (peers as chosen)."""
MAX_PARAM_CHARS = 6000
"""The longest param value MLflow stores."""
RUN_STATUS = {"completed": "FINISHED", "failed": "FAILED", "cancelled": "KILLED"}
"""A job's final state as an MLflow run status."""

_UNSAFE = re.compile(r"[^\w\-. :]")
_DATABASES = frozenset({"sqlite", "postgresql", "mysql", "mssql"})
"""The database engines MLflow stores runs in (through SQLAlchemy)."""
_NAMED_STORES = frozenset({"databricks", "databricks-uc", "uc"})
"""Tracking URIs that are a name, not a path."""

StoreKind = Literal["server", "database", "folder", "other"]


def store_kind(uri: str) -> StoreKind:
    """What a tracking URI names: an MLflow tracking ``server`` (``http(s)://``), a
    ``database`` (``sqlite:///mlflow.db``, ``postgresql+psycopg2://...``), a ``folder``
    (``file:///...``, or a plain path), or an ``other`` store (``databricks``, ...)."""
    if uri.lower() in _NAMED_STORES:
        return "other"
    scheme = urlsplit(uri).scheme.lower()
    if scheme in ("http", "https"):
        return "server"
    if scheme.split("+", 1)[0] in _DATABASES:
        return "database"
    if scheme in ("", "file") or len(scheme) == 1:  # one letter: a Windows drive
        return "folder"
    return "other"


@dataclass(frozen=True)
class Point:
    """One metric value at one step."""

    key: str
    value: float
    step: int


@dataclass(frozen=True)
class TrackedRun:
    """Everything one run gets, in MLflow's terms."""

    name: str
    status: str
    params: dict[str, str]
    tags: dict[str, str]
    metrics: list[Point] = field(default_factory=list)
    start_ms: int | None = None
    end_ms: int | None = None


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Nested mappings as dotted keys; lists and scalars as text (lists as JSON)."""
    if isinstance(value, Mapping):
        found: dict[str, str] = {}
        for key, item in value.items():
            found.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return found
    if isinstance(value, str):
        return {prefix: value}
    return {prefix: json.dumps(value)}


def metric_key(*parts: Any) -> str:
    """A metric name of ``parts`` joined by ``/``, each reduced to what MLflow accepts
    (letters, digits, ``_-. :``)."""
    cleaned = (_UNSAFE.sub("_", str(p)).strip() or "_" for p in parts)
    return "/".join("_" if c in (".", "..") else c for c in cleaned)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _class_names(config: Mapping[str, Any] | None, count: int) -> list[str]:
    feature_spec = (config or {}).get("feature_spec")
    classes = feature_spec.get("classes") if isinstance(feature_spec, Mapping) else None
    if isinstance(classes, list) and len(classes) == count:
        return [str(c) for c in classes]
    return [str(i) for i in range(count)]


def round_points(metrics: Mapping[str, Any], config: Mapping[str, Any] | None) -> list[Point]:
    """The holdout metrics of each model version, stepped by round (0: initial)."""
    points: list[Point] = []
    initial = metrics.get("initial")
    if isinstance(initial, Mapping):
        for key in ("loss", "accuracy"):
            if (v := _number(initial.get(key))) is not None:
                points.append(Point(key, v, 0))
    names = {"holdout_samples": "samples", "round_duration_s": "duration_s"}
    for rnd in metrics.get("rounds") or []:
        step = int(rnd["round"])
        values = {"loss": rnd.get("loss"), "accuracy": rnd.get("accuracy")}
        values |= {ours: rnd.get(theirs) for ours, theirs in names.items()}
        values["round_peers"] = rnd.get("peers")
        per_class = rnd.get("per_class_accuracy") or []
        labels = _class_names(config, len(per_class))
        for label, acc in zip(labels, per_class, strict=True):
            values[metric_key("class_accuracy", label)] = acc
        for key, raw in values.items():
            if (v := _number(raw)) is not None:
                points.append(Point(key, v, step))
    return points


def peer_points(metrics: Mapping[str, Any]) -> list[Point]:
    """Each peer's training metrics: per round (its last epoch) and per epoch.

    A task that was retried reports an epoch twice; the later report counts.
    """
    last: dict[tuple[str, int, int], Mapping[str, Any]] = {}
    for report in metrics.get("peers") or []:
        last[(str(report["peer_id"]), int(report["round"]), int(report["epoch"]))] = report
    points: list[Point] = []
    final_epoch: dict[tuple[str, int], Mapping[str, Any]] = {}
    for (peer, rnd, epoch), report in sorted(last.items()):
        step = (rnd - 1) * int(report["epochs"]) + epoch
        for name in ("loss", "accuracy"):
            if (v := _number(report.get(name))) is not None:
                points.append(Point(metric_key("peer", peer, f"epoch_train_{name}"), v, step))
        final_epoch[(peer, rnd)] = report  # sorted: the last epoch wins
    for (peer, rnd), report in final_epoch.items():
        values = {
            "train_loss": report.get("loss"),
            "train_accuracy": report.get("accuracy"),
            "samples": report.get("samples"),
            "duration_s": report.get("duration_s"),
        }
        for name, raw in values.items():
            if (v := _number(raw)) is not None:
                points.append(Point(metric_key("peer", peer, name), v, rnd))
    return points


def _millis(value: Any) -> int | None:
    if not value:
        return None
    try:
        return int(datetime.fromisoformat(str(value)).timestamp() * 1000)
    except ValueError:
        return None


def spec_params(job: Mapping[str, Any], model: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The params of the job's spec (``GET /api/jobs/{id}``), with its model's size from
    its architecture summary (``GET /api/jobs/{id}/model``) when given."""
    spec = {name: job[name] for name in SPEC_FIELDS if name in job}
    counts: dict[str, Any] = {}
    arch = spec.get("model")
    if isinstance(arch, Mapping) and isinstance(arch.get("nodes"), list):
        counts["layers"] = len(arch["nodes"])
        spec["model"] = {k: v for k, v in arch.items() if k != "nodes"}
    if model is not None:
        counts |= {"parameters": model.get("parameters"), "layers": len(model.get("layers", []))}
    params = flatten(spec) | flatten(counts, "model")
    for key, value in params.items():
        if len(value) > MAX_PARAM_CHARS:
            params[key] = f"({len(value)} characters: see job.json)"
    return params


def tracked_run(
    job: Mapping[str, Any],
    metrics: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    *,
    api: str = "",
    model: Mapping[str, Any] | None = None,
) -> TrackedRun:
    """The run of an ended job, from ``GET /api/jobs/{id}``, its ``/metrics``, (for
    class names) its ``/config`` and (for the model's size) its ``/model``.

    Raises
    ------
    ClientError
        The job has not ended yet.
    """
    job_id, state = str(job.get("job_id")), str(job.get("state"))
    if state not in TERMINAL_STATES:
        raise ClientError(f"job {job_id} is still {state}: export it once it has ended")
    tags = {
        JOB_ID_TAG: job_id,
        "peertrain.state": state,
        "peertrain.dataset_id": str(job.get("dataset_id")),
        "peertrain.api": api,
    }
    if job.get("final_version") is not None:
        tags["peertrain.final_version"] = str(job["final_version"])
    points = round_points(metrics, config) + peer_points(metrics)
    return TrackedRun(
        name=str(job.get("name") or job_id),
        status=RUN_STATUS.get(state, "FINISHED"),
        params=spec_params(job, model),
        tags=tags,
        metrics=points,
        start_ms=_millis(job.get("created_at")),
        end_ms=_millis(job.get("finished_at")),
    )
