"""``peertrain model ls | download``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from .datasets import transfer_progress
from .output import echo_json, fmt_time, table
from .state import state_of

__all__ = ["app"]

app = typer.Typer(help="Trained models: versions and downloads.", no_args_is_help=True)
Format = Literal["pt", "safetensors"]


@app.command("ls")
def versions(
    ctx: typer.Context,
    job_id: str,
    json_out: Annotated[bool, typer.Option("--json", help="Plain JSON on stdout.")] = False,
) -> None:
    """A job's model versions (one per aggregated round)."""
    state = state_of(ctx)
    with state.client() as pt:
        found = pt.model_versions(job_id)
    if json_out:
        echo_json(found)
        return
    rows = [
        [v.get("version"), fmt_time(v.get("created_at")), v.get("sha256"), v.get("metrics")]
        for v in found.get("versions") or []
        if isinstance(v, dict)
    ]
    table(state.out, ["VERSION", "CREATED", "SHA256", "METRICS"], rows, empty="no versions yet")
    state.err.print("final model: " + ("yes" if found.get("final") else "not yet"))


@app.command("download")
def download(
    ctx: typer.Context,
    job_id: str,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Default: <job>.<format>")
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="pt or safetensors")] = "pt",
) -> None:
    """Download the job's final model."""
    state = state_of(ctx)
    dest = output or Path(f"{job_id}.{fmt}")
    with state.client() as pt, transfer_progress(state) as bar:
        task = bar.add_task(f"downloading {dest.name}", total=None)

        def report(received: int, total: int) -> None:
            bar.update(task, completed=received, total=total or None)

        pt.download_model(job_id, dest, fmt=fmt, progress=report)
    state.err.print(f"saved {dest} ({dest.stat().st_size} bytes)")
