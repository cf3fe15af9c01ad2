"""``peertrain model ls | download``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from .datasets import transfer_progress
from .output import JsonFlag, echo_json, fmt_float, fmt_time, table
from .state import state_of

__all__ = ["app"]

app = typer.Typer(help="Trained models: versions and downloads.", no_args_is_help=True)
Format = Literal["pt", "safetensors"]


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
        Path | None, typer.Option("--output", "-o", help="Default: <job>.<format>")
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="pt or safetensors")] = "pt",
    json_out: JsonFlag = False,
) -> None:
    """Download the job's final model."""
    state = state_of(ctx)
    dest = output or Path(f"{job_id}.{fmt}")
    with state.client() as pt, transfer_progress(state) as bar:
        task = bar.add_task(f"downloading {dest.name}", total=None)

        def report(received: int, total: int) -> None:
            bar.update(task, completed=received, total=total or None)

        pt.download_model(job_id, dest, fmt=fmt, progress=report)
    size = dest.stat().st_size
    if json_out:
        echo_json({"job_id": job_id, "path": str(dest), "format": fmt, "bytes": size})
    else:
        state.err.print(f"saved {dest} ({size} bytes)")
