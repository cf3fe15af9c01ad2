"""``peertrain job create | ls | show | watch | cancel | events | export``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.live import Live
from rich.text import Text

from peertrain.client.jobs import JobProgress

from .jobspec import SECTIONS, build_spec, load_config
from .mlflow_export import export_job
from .output import echo_json, fmt_float, fmt_time, key_values, table
from .state import state_of
from .watchview import STATE_STYLE, failure_line, render_watch

__all__ = ["app"]

app = typer.Typer(help="Training jobs: create, follow, inspect, cancel.", no_args_is_help=True)
app.command("export")(export_job)
JsonFlag = Annotated[bool, typer.Option("--json", help="Plain JSON on stdout.")]
EXIT_FAILED = 1
EXIT_CANCELLED = 3
_T = "training"
_A = "aggregation"


def _state(value: Any) -> Text:
    return Text(str(value or "-"), style=STATE_STYLE.get(str(value), ""))


@app.command("create")
def create(
    ctx: typer.Context,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="A job.yaml or job.json to start from.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="A name for the job.")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="Dataset id.")] = None,
    peer: Annotated[
        list[str] | None, typer.Option("--peer", help="A peer id (repeatable).")
    ] = None,
    count: Annotated[int | None, typer.Option(min=1, help="Or: select N active peers.")] = None,
    device: Annotated[str | None, typer.Option(help="Selection filter: cpu|cuda|mps")] = None,
    min_memory_gb: Annotated[float | None, typer.Option(help="Selection filter.")] = None,
    arch: Annotated[str | None, typer.Option(help="logreg, mlp or cnn")] = None,
    model_opt: Annotated[
        list[str] | None, typer.Option("--model-opt", help="KEY=VALUE model field (repeatable)")
    ] = None,
    rounds: Annotated[int | None, typer.Option(min=1, rich_help_panel=_T)] = None,
    local_epochs: Annotated[int | None, typer.Option(min=1, rich_help_panel=_T)] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, rich_help_panel=_T)] = None,
    lr: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None,
    optimizer: Annotated[str | None, typer.Option(rich_help_panel=_T)] = None,
    momentum: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None,
    weight_decay: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None,
    seed: Annotated[int | None, typer.Option(rich_help_panel=_T)] = None,
    proximal_mu: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None,
    strategy: Annotated[str | None, typer.Option(rich_help_panel=_A)] = None,
    min_peers: Annotated[int | None, typer.Option(min=1, rich_help_panel=_A)] = None,
    round_deadline: Annotated[
        float | None, typer.Option(help="Seconds.", rich_help_panel=_A)
    ] = None,
    server_lr: Annotated[float | None, typer.Option(rich_help_panel=_A)] = None,
    trim_fraction: Annotated[float | None, typer.Option(rich_help_panel=_A)] = None,
    max_update_norm: Annotated[float | None, typer.Option(rich_help_panel=_A)] = None,
    sharding: Annotated[
        str | None, typer.Option(help="iid, stratified or dirichlet", rich_help_panel="sharding")
    ] = None,
    alpha: Annotated[float | None, typer.Option(rich_help_panel="sharding")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the request body; send nothing.")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Create a training job from flags and/or a config file; prints the job id."""
    flags = {k: v for k, v in locals().items() if k in _FLAG_NAMES}
    spec = build_spec(
        load_config(config) if config else {},
        flags,
        peers=peer,
        count=count,
        device=device,
        min_memory_gb=min_memory_gb,
        model_opts=model_opt,
    )
    if dry_run:
        echo_json(spec)
        return
    state = state_of(ctx)
    with state.client() as pt:
        job_id = pt.create_job(spec)
    if json_out:
        echo_json({"job_id": job_id})
        return
    state.err.print(f"created job [bold]{spec.get('name')}[/bold] (`peertrain job watch {job_id}`)")
    typer.echo(job_id)


_FLAG_NAMES = frozenset(SECTIONS)


@app.command("ls")
def list_jobs(ctx: typer.Context, json_out: JsonFlag = False) -> None:
    """Your jobs."""
    state = state_of(ctx)
    with state.client() as pt:
        found = pt.list_jobs()
    if json_out:
        echo_json(found)
        return
    rows = [
        [
            j.get("job_id") or "-",
            j.get("name") or "-",
            _state(j.get("state")),
            f"{j.get('current_round', '-')}/{j.get('rounds', '-')}",
            fmt_float(j.get("accuracy")),
            fmt_float(j.get("loss")),
            fmt_time(j.get("created_at")),
        ]
        for j in found
    ]
    columns = ["JOB", "NAME", "STATE", "ROUND", "ACCURACY", "LOSS", "CREATED"]
    table(state.out, columns, rows, empty="no jobs yet")


@app.command("show")
def show_job(ctx: typer.Context, job_id: str, json_out: JsonFlag = False) -> None:
    """One job: state, progress, latest metrics, its tasks (and why any failed)."""
    state = state_of(ctx)
    with state.client() as pt:
        job = pt.get_job(job_id)
    if json_out:
        echo_json(job)
        return
    key_values(state.out, job, skip=("tasks", "peers", "latest", "error"))
    latest = job.get("latest")
    if isinstance(latest, dict):
        state.out.print(
            f"latest: round {latest.get('round', '-')}  loss {fmt_float(latest.get('loss'))}"
            f"  accuracy {fmt_float(latest.get('accuracy'))}"
        )
    peers = job.get("peers")
    if isinstance(peers, list) and peers:
        state.out.print(Text("peers: " + ", ".join(str(p) for p in peers)))
    if job.get("error"):
        state.out.print(Text(f"error: {job['error']}", style="red"))
    tasks = [t for t in job.get("tasks") or [] if isinstance(t, dict)]
    rows = [
        [
            t.get("task_id"),
            t.get("round"),
            t.get("shard"),
            t.get("peer_id"),
            _state(t.get("state")),
            _first_line(t.get("error")),
        ]
        for t in tasks
    ]
    if rows:
        table(state.out, ["TASK", "ROUND", "SHARD", "PEER", "STATE", "ERROR"], rows, title="tasks")
    for t in tasks:
        if t.get("traceback"):
            state.out.print(Text(f"task {t.get('task_id')} traceback:", style="bold red"))
            state.out.print(Text(str(t["traceback"])))


def _first_line(value: Any) -> str:
    lines = str(value or "").splitlines()
    return lines[0] if lines else "-"


@app.command("cancel")
def cancel(ctx: typer.Context, job_id: str) -> None:
    """Ask a job to stop; it ends `cancelled`."""
    state = state_of(ctx)
    with state.client() as pt:
        pt.cancel_job(job_id)
    state.err.print(f"cancelling {job_id}")


@app.command("events")
def events(ctx: typer.Context, job_id: str, json_out: JsonFlag = False) -> None:
    """A job's event history, oldest first."""
    state = state_of(ctx)
    with state.client() as pt:
        items = pt.job_events(job_id)
    if json_out:
        echo_json(items)
        return
    envelope = {"id", "type", "occurred_at", "stream", "seq", "version", "metadata"}
    rows = [
        [
            e.get("seq"),
            fmt_time(e.get("occurred_at")),
            e.get("type") or "-",
            e.get("data") if "data" in e else {k: v for k, v in e.items() if k not in envelope},
        ]
        for e in items
    ]
    table(state.out, ["SEQ", "AT", "TYPE", "DATA"], rows, empty="no events")


@app.command("watch")
def watch(
    ctx: typer.Context,
    job_id: str,
    interval: Annotated[float, typer.Option(min=0.0, help="Seconds between polls.")] = 2.0,
) -> None:
    """Follow a job round by round until it ends.

    Exit status: 0 completed, 1 failed, 3 cancelled.
    """
    state = state_of(ctx)
    if state.poll_interval is not None:
        interval = state.poll_interval
    last: JobProgress | None = None
    with state.client() as pt, Live(console=state.out, auto_refresh=False) as live:
        for progress in pt.watch_job(job_id, interval=interval):
            last = progress
            live.update(render_watch(progress), refresh=True)
    assert last is not None
    if last.state == "failed":
        state.err.print(Text(f"job {job_id} failed: {failure_line(last.job)}", style="red"))
        raise typer.Exit(EXIT_FAILED)
    if last.state == "cancelled":
        state.err.print(Text(f"job {job_id} was cancelled", style="yellow"))
        raise typer.Exit(EXIT_CANCELLED)
