"""``peertrain dataset upload | ls | show | preview | rm``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.text import Text

from .output import Col, JsonFlag, WideFlag, YesFlag, echo_json, fmt_time, key_values, table
from .shortids import DATASET, resolve, short_ids, shown_id
from .state import state_of

__all__ = ["app", "transfer_progress"]

app = typer.Typer(help="Datasets: upload, list, inspect, preview, delete.", no_args_is_help=True)
_STATUS_STYLE = {"validated": "green", "validating": "yellow", "rejected": "red"}


def transfer_progress(state: Any) -> Progress:
    """A bytes / bytes-per-second progress bar on stderr (only on a terminal).

    Elsewhere a transient bar shows nothing useful but leaves an empty line behind,
    which would turn a one-line error into two lines.
    """
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=state.err,
        transient=True,
        disable=not state.err.is_terminal,
    )


def dataset_row(d: dict[str, Any], shown: str | None = None, *, wide: bool = True) -> list[Any]:
    """One dataset as a table row (its id as ``shown`` when given; dates short unless
    ``wide``)."""
    classes = d.get("classes")
    return [
        shown or DATASET.id_of(d) or "-",
        d.get("name") or "-",
        Text(str(d.get("status") or "-"), style=_STATUS_STYLE.get(str(d.get("status")), "")),
        d.get("kind") or "-",
        d.get("rows"),
        len(classes) if isinstance(classes, list) else None,
        fmt_time(d.get("created_at"), short=not wide),
    ]


@app.command("upload")
def upload(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, readable=True, help=".csv/.csv.gz/.zip")
    ],
    name: Annotated[str | None, typer.Option(help="Default: the file name.")] = None,
    label_column: Annotated[
        str | None, typer.Option(help="The label column (default: the last one)")
    ] = None,
    holdout_fraction: Annotated[
        float | None, typer.Option(min=0.0, max=0.5, help="Held out for evaluation.")
    ] = None,
    image_size: Annotated[str | None, typer.Option(help="Image datasets: WIDTHxHEIGHT")] = None,
    image_fit: Annotated[
        Literal["crop", "stretch"] | None,
        typer.Option(
            help="Image datasets: crop (keep the aspect ratio, cut the centre; default) "
            "or stretch to WIDTHxHEIGHT."
        ),
    ] = None,
    holdout_seed: Annotated[
        int | None,
        typer.Option(min=0, help="Fix the holdout split (default: each upload draws its own)."),
    ] = None,
    missing_values: Annotated[
        str | None,
        typer.Option(
            help="Tables: the cell values that mean missing, comma-separated; replaces the "
            "default (empty, NA, N/A, NaN, null, None, ?, -). Compared trimmed and ignoring "
            "case; the empty cell always is one."
        ),
    ] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until validation ended.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds --wait waits.")] = 600.0,
    json_out: JsonFlag = False,
) -> None:
    """Upload a dataset; prints its id (validation follows; --wait waits for it)."""
    state = state_of(ctx)
    with state.client() as pt:
        with transfer_progress(state) as bar:
            task = bar.add_task(f"uploading {file.name}", total=file.stat().st_size)

            def report(sent: int, total: int) -> None:
                bar.update(task, completed=sent, total=total)

            dataset_id = pt.upload_dataset(
                file,
                name=name,
                label_column=label_column,
                holdout_fraction=holdout_fraction,
                image_size=image_size,
                image_fit=image_fit,
                holdout_seed=holdout_seed,
                missing_values=missing_values,
                progress=report,
            )
        if not wait:
            if json_out:
                echo_json({"dataset_id": dataset_id, "status": "validating"})
            else:
                state.err.print(f"uploaded; validating (`peertrain dataset show {dataset_id}`)")
                typer.echo(dataset_id)
            return
        with state.err.status(f"validating {dataset_id}"):
            interval = 1.0 if state.poll_interval is None else state.poll_interval
            dataset = pt.wait_for_dataset(dataset_id, timeout=timeout, interval=interval)
    if json_out:
        echo_json(dataset)
        return
    summary = f"validated: {dataset.get('rows', '?')} rows"
    if isinstance(dataset.get("classes"), list):
        summary += f", {len(dataset['classes'])} classes"
    state.err.print(summary)
    print_notes(state.err, dataset)
    typer.echo(dataset_id)


def print_notes(console: Any, dataset: dict[str, Any]) -> None:
    """What validation decided that the uploader should know, one line each."""
    for note in dataset.get("notes") or []:
        console.print(Text(f"note: {note}", style="yellow"))


@app.command("ls")
def list_datasets(ctx: typer.Context, wide: WideFlag = False, json_out: JsonFlag = False) -> None:
    """Your datasets, newest first."""
    state = state_of(ctx)
    with state.client() as pt:
        found = pt.list_datasets()
    if json_out:
        echo_json(found)
        return
    short = short_ids(DATASET.id_of(d) for d in found)
    rows = [dataset_row(d, shown_id(DATASET.id_of(d), short, wide), wide=wide) for d in found]
    columns: list[str | Col] = [
        "DATASET",
        Col("NAME", flex=True),
        "STATUS",
        "KIND",
        "ROWS",
        "CLASSES",
        "CREATED",
    ]
    table(state.out, columns, rows, empty="no datasets yet", wide=wide)


@app.command("show")
def show_dataset(ctx: typer.Context, dataset_id: str, json_out: JsonFlag = False) -> None:
    """One dataset: status (and why it was rejected), size, schema, classes."""
    state = state_of(ctx)
    with state.client() as pt:
        dataset = pt.get_dataset(resolve(pt, DATASET, dataset_id))
    if json_out:
        echo_json(dataset)
        return
    key_values(state.out, dataset, skip=("schema", "error", "notes"))
    error = dataset.get("error")
    if isinstance(error, dict):
        state.out.print(Text(f"rejected: {error.get('message', '?')}", style="red"))
    print_notes(state.out, dataset)
    schema = dataset.get("schema")
    if isinstance(schema, list) and schema:
        rows = [
            [
                str(c.get("name")),
                str(c.get("dtype") or c.get("type") or "-"),
                c.get("missing"),
                c.get("reason") or "",
            ]
            for c in schema
            if isinstance(c, dict)
        ]
        table(state.out, ["COLUMN", "TYPE", "MISSING", "WHY"], rows, title="schema")


@app.command("preview")
def preview(ctx: typer.Context, dataset_id: str, json_out: JsonFlag = False) -> None:
    """The first rows as uploaded (image datasets: their first files)."""
    state = state_of(ctx)
    with state.client() as pt:
        found = pt.preview_dataset(resolve(pt, DATASET, dataset_id))
    if json_out:
        echo_json(found)
        return
    columns = [str(c) for c in found.get("columns") or []]
    rows = [r for r in found.get("rows") or [] if isinstance(r, list)]
    table(state.out, columns or ["ROW"], rows, empty="no rows")


@app.command("rm")
def remove(
    ctx: typer.Context,
    dataset_id: str,
    yes: YesFlag = False,
    json_out: JsonFlag = False,
) -> None:
    """Delete a dataset and its stored objects (jobs keep the shards they were given)."""
    state = state_of(ctx)
    with state.client() as pt:
        dataset_id = resolve(pt, DATASET, dataset_id)
        if not yes:
            typer.confirm(f"delete dataset {dataset_id}?", abort=True, err=True)
        pt.delete_dataset(dataset_id)
    if json_out:
        echo_json({"dataset_id": dataset_id, "deleted": True})
    else:
        state.err.print(f"deleted dataset {dataset_id}")
