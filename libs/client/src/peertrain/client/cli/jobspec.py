"""A job's creation body from ``--config job.yaml|job.json`` and command-line flags.

Flags override the file; fields nobody gave are left out, for the orchestrator's
defaults. Pure: no I/O besides reading the config file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

# typer 0.29 vendors click; its usage error (exit 2) is not re-exported publicly.
from typer._click.exceptions import UsageError

__all__ = [
    "SECTIONS",
    "Sets",
    "apply_sets",
    "build_spec",
    "init_from",
    "load_config",
    "merge_flags",
    "rerun_spec",
]

# flag name -> (section, field); section "" is the top level.
SECTIONS: dict[str, tuple[str, str]] = {
    "name": ("", "name"),
    "dataset": ("", "dataset_id"),
    "arch": ("model", "arch"),
    "rounds": ("training", "rounds"),
    "local_epochs": ("training", "local_epochs"),
    "batch_size": ("training", "batch_size"),
    "lr": ("training", "lr"),
    "optimizer": ("training", "optimizer"),
    "momentum": ("training", "momentum"),
    "weight_decay": ("training", "weight_decay"),
    "seed": ("training", "seed"),
    "proximal_mu": ("training", "proximal_mu"),
    "strategy": ("aggregation", "strategy"),
    "min_peers": ("aggregation", "min_peers"),
    "round_deadline": ("aggregation", "round_deadline_s"),
    "server_lr": ("aggregation", "server_lr"),
    "trim_fraction": ("aggregation", "trim_fraction"),
    "max_update_norm": ("aggregation", "max_update_norm"),
    "sharding": ("sharding", "strategy"),
    "alpha": ("sharding", "alpha"),
}


Sets = Annotated[
    list[str] | None,
    typer.Option("--set", help="KEY=VALUE, e.g. training.lr=0.01 (repeatable)."),
]
"""``--set``, for :func:`apply_sets` (``job rerun``; ``job create`` and ``simulate`` take
it with their other spec options, see :mod:`.specoptions`)."""


def load_config(path: Path) -> dict[str, Any]:
    """A job file: YAML (``.yaml``/``.yml``) or JSON; a usage error when unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise typer.BadParameter(f"cannot read {path}: {reason}", param_hint="--config") from None
    try:
        yaml_file = path.suffix.lower() in (".yaml", ".yml")
        data = yaml.safe_load(text) if yaml_file else json.loads(text)
    except (ValueError, yaml.YAMLError) as exc:
        reason = " ".join(str(exc).split())
        raise typer.BadParameter(f"{path} is not valid: {reason}", param_hint="--config") from None
    if not isinstance(data, dict):
        raise typer.BadParameter(f"{path} must hold a mapping", param_hint="--config")
    return data


def _model_option(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise typer.BadParameter(f"{text!r} is not KEY=VALUE", param_hint="--model-opt")
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    return key.strip(), value


def merge_flags(
    base: dict[str, Any], flags: dict[str, Any], model_opts: list[str] | None = None
) -> dict[str, Any]:
    """``base`` (a deep copy) with the flags given applied.

    Parameters
    ----------
    base
        From ``--config`` and ``--set`` (may be empty).
    flags
        ``SECTIONS`` flag name -> value; ``None`` means not given.
    model_opts
        ``KEY=VALUE`` model fields (values parsed as JSON when they can be).
    """
    spec: dict[str, Any] = json.loads(json.dumps(base))  # a deep copy
    for flag, value in flags.items():
        if value is None:
            continue
        section, field = SECTIONS[flag]
        target = spec if not section else spec.setdefault(section, {})
        target[field] = value
    for text in model_opts or []:
        key, value = _model_option(text)
        spec.setdefault("model", {})[key] = value
    return spec


def build_spec(
    spec: dict[str, Any],
    *,
    peers: list[str] | None = None,
    count: int | None = None,
    device: str | None = None,
    min_memory_gb: float | None = None,
) -> dict[str, Any]:
    """The body of ``POST /api/jobs``: ``spec`` (see :func:`merge_flags`; a deep copy)
    with its peers, explicit ids or a selection of ``count`` peers with filters.

    No model is needed: the job's default is an ``mlp``, as a simulation's.

    Raises
    ------
    UsageError
        No dataset, or no peers.
    """
    spec = json.loads(json.dumps(spec))
    if peers:
        spec["peers"] = peers
        spec.pop("selection", None)
    elif count is not None or device is not None or min_memory_gb is not None:
        selection = spec.setdefault("selection", {})
        if count is not None:
            selection["count"] = count
        filters = selection.setdefault("filters", {})
        if device is not None:
            filters["device"] = device
        if min_memory_gb is not None:
            filters["min_memory_gb"] = min_memory_gb
        if not filters:
            selection.pop("filters")
        spec.pop("peers", None)
    _check(spec)
    return spec


def _check(spec: dict[str, Any]) -> None:
    if not spec.get("dataset_id"):
        raise UsageError("give the dataset: --dataset ID (or dataset_id in --config)")
    selection = spec.get("selection")
    if not spec.get("peers") and not (isinstance(selection, dict) and selection.get("count")):
        raise UsageError("give peers: --peer ID (repeatable) or --count N")
    if not spec.get("name"):
        spec["name"] = f"job-{str(spec['dataset_id'])[-8:]}"


def _value(raw: str) -> Any:
    """A ``--set`` value as YAML reads it (``0.01``, ``true``, ``[64, 32]``, ``adam``)."""
    try:
        return yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        return raw


def apply_sets(spec: dict[str, Any], sets: list[str]) -> dict[str, Any]:
    """``spec`` with each ``a.b.c=VALUE`` of ``sets`` applied (a deep copy).

    Setting ``peers`` drops a ``selection`` and setting ``selection...`` drops ``peers``:
    a job names its peers one way.

    Raises
    ------
    BadParameter
        A ``--set`` that is not ``KEY=VALUE``, or a key that goes through a value.
    """
    out: dict[str, Any] = json.loads(json.dumps(spec))
    for text in sets:
        key, sep, raw = text.partition("=")
        path = [p.strip() for p in key.split(".")]
        if not sep or not all(path):
            raise typer.BadParameter(
                f"{text!r} is not KEY=VALUE (e.g. training.lr=0.01)", param_hint="--set"
            )
        target = out
        for i, part in enumerate(path[:-1]):
            nested = target.setdefault(part, {})
            if not isinstance(nested, dict):
                where = ".".join(path[: i + 1])
                raise typer.BadParameter(f"{where} is not a mapping", param_hint="--set")
            target = nested
        target[path[-1]] = _value(raw)
        if path[0] == "peers":
            out.pop("selection", None)
        elif path[0] == "selection":
            out.pop("peers", None)
    return out


def rerun_spec(job: dict[str, Any]) -> dict[str, Any]:
    """The creation body of a job like ``job`` (``GET /api/jobs/{id}``): same dataset,
    peers, model, training, aggregation, sharding and starting model; named
    ``<name>-rerun``."""
    sharding = job.get("sharding") if isinstance(job.get("sharding"), dict) else {}
    spec: dict[str, Any] = {
        "name": f"{job.get('name') or 'job'}-rerun",
        "dataset_id": job.get("dataset_id"),
        "peers": list(job.get("peers") or []),
        "model": job.get("model") or {},
        "training": job.get("training") or {},
        "aggregation": job.get("aggregation") or {},
        # the sharding seed is the training seed: the request has no field for it
        "sharding": {k: v for k, v in (sharding or {}).items() if k in ("strategy", "alpha")},
    }
    source = job.get("init_from")
    if isinstance(source, dict) and source.get("job_id"):
        spec["init_from"] = {"job_id": source["job_id"], "version": source.get("version")}
    return spec


def init_from(text: str, job_id_of: Callable[[str], str] = str) -> dict[str, Any]:
    """``JOB`` or ``JOB:vR`` (``JOB:R``) as the request's ``init_from``: the job's
    newest model version, or version ``R``; ``job_id_of`` turns a short id into the
    job's id."""
    job_id, sep, version = text.rpartition(":")
    if not sep:
        return {"job_id": job_id_of(text)}
    number = version.removeprefix("v")
    if not job_id or not number.isdigit():
        raise typer.BadParameter(f"{text!r} is not JOB or JOB:vR", param_hint="--init-from")
    return {"job_id": job_id_of(job_id), "version": int(number)}
