"""``peertrain model ls | download``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from .datasets import transfer_progress
from .output import JsonFlag, echo_json, fmt_float, fmt_time, table
from .state import state_of

__all__ = ["app", "default_path"]

app = typer.Typer(help="Trained models: versions and downloads.", no_args_is_help=True)
Format = Literal["pt", "safetensors"]
BEST = "best"


def _which(value: str | None) -> int | str | None:
    """``--version``: a version number or ``best`` (``None``: the final model)."""
    return int(value) if value is not None and value.isdigit() else value


def _checked(value: str | None) -> str | None:
    if value is not None and value != BEST and not value.isdigit():
        raise typer.BadParameter(f"a version number or {BEST!r}, not {value!r}")
    return value


def default_path(job_id: str, version: int | str | None, fmt: str) -> Path:
    """Where a download goes without ``-o``: ``<job>.<fmt>`` for the final model,
    ``<job>-v<N>.<fmt>`` or ``<job>-best.<fmt>`` for a version."""
    if version is None:
        return Path(f"{job_id}.{fmt}")
    tag = BEST if version == BEST else f"v{version}"
    return Path(f"{job_id}-{tag}.{fmt}")


def _version_row(v: dict[str, Any]) -> list[Any]:
    evaluation = v.get("evaluation")
    metrics: dict[str, Any] = evaluation if isinstance(evaluation, dict) else {}
    return [
        v.get("version"),
        fmt_time(v.get("created_at")),
        fmt_float(metrics.get("loss")),
        fmt_float(metrics.get("accuracy")),
        len(v.get("peers") or []),
        str(v.get("sha256") or "-")[:12],
    ]


@app.command("ls")
def versions(
    ctx: typer.Context,
    job_id: str,
    json_out: JsonFlag = False,
) -> None:
    """A job's model versions (one per aggregated round)."""
    state = state_of(ctx)
    with state.client() as pt:
        found = pt.model_versions(job_id)
    if json_out:
        echo_json(found)
        return
    rows = [_version_row(v) for v in found.get("versions") or [] if isinstance(v, dict)]
    columns = ["VERSION", "CREATED", "LOSS", "ACCURACY", "PEERS", "SHA256"]
    table(state.out, columns, rows, empty="no versions yet")
    final = found.get("final_available", found.get("final"))
    state.err.print("final model: " + ("yes" if final else "not yet"))


@app.command("download")
def download(
    ctx: typer.Context,
    job_id: str,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Default: <job>.<format>, <job>-v<N>.<format>, <job>-best.<format>",
        ),
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="pt or safetensors")] = "pt",
    version: Annotated[
        str | None,
        typer.Option(
            "--version",
            callback=_checked,
            metavar="N|best",
            help="A model version, or best (highest holdout accuracy); default: the final model",
        ),
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Download the job's final model, or any of its versions (also of cancelled or
    failed jobs); its sha256 is checked against the server's."""
    state, which = state_of(ctx), _which(version)
    dest = output or default_path(job_id, which, fmt)
    with state.client() as pt, transfer_progress(state) as bar:
        task = bar.add_task(f"downloading {dest.name}", total=None)

        def report(received: int, total: int) -> None:
            bar.update(task, completed=received, total=total or None)

        pt.download_model(job_id, dest, version=which, fmt=fmt, progress=report)
    size = dest.stat().st_size
    if json_out:
        found = {"job_id": job_id, "version": which, "path": str(dest), "format": fmt}
        echo_json({**found, "bytes": size})
    else:
        state.err.print(f"saved {dest} ({size} bytes)")
