"""``peertrain job export <job> --mlflow <tracking URI>``: an ended job as an MLflow run.

What the run gets is decided in :mod:`peertrain.client.tracking` (params: the whole spec;
metrics: per round, round as the step, and per peer; tags). Here: read the job through
the SDK, log it with MLflow's client, and attach the final model (``model/final.pt``), a
layer graph's spec (``model/graph.json``) and the API's own answers (``job.json``,
``metrics.json``, ``config.json``, ``model.json``: the architecture summary).

The tracking URI is any MLflow takes: a tracking server (``http(s)://``), a database
(``sqlite:///mlflow.db``; the run's artifacts then go where MLflow puts a new
experiment's, ``./mlruns``) or a folder (``file:///...`` or a path, which MLflow 3 keeps
only when told to: the command tells it, as the user named one).

MLflow's client (``mlflow-skinny``, with SQLAlchemy and Alembic for a database: the extra
``peertrain-client[mlflow]``) is imported only when this command runs, so the rest of
the CLI works without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from peertrain.client.errors import ApiError, ClientError
from peertrain.client.sync import Client
from peertrain.client.tracking import JOB_ID_TAG, TrackedRun, store_kind, tracked_run

from .output import JsonFlag, echo_json
from .shortids import JOB, resolve
from .state import state_of

__all__ = ["export_job"]

INSTALL_HINT = "pip install 'peertrain-client[mlflow]'"
# MLflow's HTTP client retries 7 times with a doubling backoff (minutes) before it gives
# up on a tracking server that is not there; MLflow 3 refuses a folder as its store
# unless told the user means it (the user named one). A user who set these keeps theirs.
_MLFLOW_ENV = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "60",
    "MLFLOW_ALLOW_FILE_STORE": "true",
}


def _mlflow(uri: str) -> Any:
    """The ``mlflow`` module, able to write to ``uri``, or one clear line saying how to
    get what it lacks."""
    for key, value in _MLFLOW_ENV.items():
        os.environ.setdefault(key, value)
    try:
        import mlflow
        import mlflow.exceptions
    except ImportError as exc:
        raise ClientError(f"exporting to MLflow needs its client: {INSTALL_HINT} ({exc})") from None
    if store_kind(uri) == "database":
        try:
            import alembic  # noqa: F401
            import sqlalchemy  # noqa: F401
        except ImportError as exc:
            raise ClientError(
                f"exporting to a database ({uri}) needs SQLAlchemy and Alembic beside"
                f" MLflow's client: {INSTALL_HINT} ({exc})"
            ) from None
    return mlflow


def _optional(fetch: Any, job_id: str) -> dict[str, Any] | None:
    """An answer that a job may not have (yet): ``None`` on a 404."""
    try:
        answer: dict[str, Any] = fetch(job_id)
    except ApiError as exc:
        if exc.status != 404:
            raise
        return None
    return answer


def _read_job(pt: Client, job_id: str, api: str, folder: Path) -> tuple[TrackedRun, list[Path]]:
    """The run to log and the files to attach (written into ``folder``; those under
    ``folder/model`` go to the run's ``model/``)."""
    job = pt.get_job(job_id)
    metrics = _optional(pt.job_metrics, job_id) or {}
    config = _optional(pt.job_config, job_id)
    model = _optional(pt.job_model, job_id)
    run = tracked_run(job, metrics, config, api=api, model=model)
    (folder / "model").mkdir()
    answers = {
        "job.json": job,
        "metrics.json": metrics,
        "config.json": config,
        "model.json": model,
        "model/graph.json": job["model"] if job.get("model", {}).get("arch") == "graph" else None,
    }
    files: list[Path] = []
    for name, answer in answers.items():
        if answer is not None:
            path = folder / name
            path.write_text(json.dumps(answer, indent=2, default=str))
            files.append(path)
    if job.get("final_version") is not None:
        files.append(pt.download_model(job_id, folder / "model" / "final.pt", fmt="pt"))
    return run, files


def _chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    while exc is not None and exc not in found:
        found.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return found


@contextlib.contextmanager
def _mlflow_errors(mlflow: Any, uri: str) -> Iterator[None]:
    """MLflow's failures as one line; its own notes (it prints run URLs) on stderr."""
    import requests  # MLflow's HTTP client

    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    except (mlflow.exceptions.MlflowException, requests.RequestException) as exc:
        chain = _chain(exc)
        if any(isinstance(e, requests.ConnectionError) for e in chain):
            raise ClientError(
                f"cannot reach the MLflow tracking server at {uri} ({chain[-1]})"
            ) from None
        first = str(getattr(exc, "message", exc)).strip().splitlines()
        raise ClientError(f"MLflow at {uri}: {first[0] if first else type(exc).__name__}") from None


def _experiment_id(client: Any, name: str) -> str:
    found = client.get_experiment_by_name(name)
    return str(found.experiment_id) if found is not None else str(client.create_experiment(name))


def _existing_run(client: Any, experiment_id: str, job_id: str) -> str | None:
    runs = client.search_runs(
        [experiment_id], filter_string=f"tags.`{JOB_ID_TAG}` = '{job_id}'", max_results=1
    )
    return str(runs[0].info.run_id) if runs else None


def _artifact_dir(path: Path) -> str | None:
    return "model" if path.parent.name == "model" else None


def _log(mlflow: Any, client: Any, experiment_id: str, run: TrackedRun, files: list[Path]) -> str:
    """Create the run and log everything; a run that fails half-way is deleted."""
    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    created = client.create_run(
        experiment_id, start_time=run.start_ms, tags=run.tags, run_name=run.name
    )
    run_id = str(created.info.run_id)
    try:
        client.log_batch(
            run_id,
            params=[Param(k, v) for k, v in sorted(run.params.items())],
            metrics=[Metric(p.key, p.value, now, p.step) for p in run.metrics],
        )
        for path in files:
            client.log_artifact(run_id, str(path), _artifact_dir(path))
        client.set_terminated(run_id, run.status, end_time=run.end_ms)
    except BaseException:
        with contextlib.suppress(Exception):
            client.delete_run(run_id)
        raise
    return run_id


def export_job(
    ctx: typer.Context,
    job_id: str,
    mlflow_uri: Annotated[
        str,
        typer.Option(
            "--mlflow",
            metavar="TRACKING_URI",
            help="MLflow tracking server (http://host:5000), database (sqlite:///mlflow.db)"
            " or folder (file:///path/mlruns): any tracking URI MLflow takes.",
        ),
    ],
    experiment: Annotated[
        str, typer.Option(help="MLflow experiment (created when missing).")
    ] = "peertrain",
    again: Annotated[
        bool,
        typer.Option("--again", help="Log another run when the job already has one there."),
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Log an ended job to MLflow: its spec as params, per-round and per-peer metrics
    (round as the step), and the final model as an artifact. Prints the run id."""
    mlflow = _mlflow(mlflow_uri)  # first: a missing client is said before anything is fetched
    state = state_of(ctx)
    with tempfile.TemporaryDirectory(prefix="peertrain-mlflow-") as tmp:
        with state.client() as pt:
            job_id = resolve(pt, JOB, job_id)  # a short id, as every command takes
            run, files = _read_job(pt, job_id, state.api, Path(tmp))
        with _mlflow_errors(mlflow, mlflow_uri):
            client = mlflow.MlflowClient(tracking_uri=mlflow_uri)
            experiment_id = _experiment_id(client, experiment)
            existing = _existing_run(client, experiment_id, job_id)
            if existing is not None and not again:
                raise ClientError(
                    f"job {job_id} is already in experiment {experiment!r} as run {existing}"
                    " (--again logs another)"
                )
            run_id = _log(mlflow, client, experiment_id, run, files)
    artifacts = sorted(f"{_artifact_dir(f) or '.'}/{f.name}".removeprefix("./") for f in files)
    if json_out:
        echo_json(
            {
                "run_id": run_id,
                "experiment_id": experiment_id,
                "tracking_uri": mlflow_uri,
                "params": len(run.params),
                "metric_values": len(run.metrics),
                "artifacts": artifacts,
            }
        )
        return
    state.err.print(
        f"logged job {job_id} to MLflow run {run_id} (experiment {experiment!r}): "
        f"{len(run.params)} params, {len(run.metrics)} metric values, "
        f"artifacts {', '.join(artifacts)}",
        markup=False,
    )
    typer.echo(run_id)
