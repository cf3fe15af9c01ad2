"""``peertrain predict`` and ``peertrain convert``: a downloaded model, used locally.

Both need torch and numpy (peertrain-ml's :mod:`peertrain.ml.export`), imported when a
command runs, so the rest of the CLI works without them. No server is involved.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from peertrain.client.errors import ClientError

from .state import state_of

__all__ = ["convert", "predict"]

_BATCH = 4096


def _export() -> Any:
    try:
        from peertrain.ml import export
    except ImportError as exc:
        raise ClientError(
            f"this command needs torch and numpy with peertrain-ml installed ({exc})"
        ) from None
    return export


def _load(export: Any, model: Path) -> Any:
    if not model.is_file():
        raise ClientError(f"no model file {model}")
    try:
        return export.load(model)
    except (export.ExportError, ValueError, RuntimeError) as exc:
        raise ClientError(f"{model}: {exc}") from None


def _predicted(model: Any, x: Any) -> Any:
    import torch

    parts = []
    with torch.inference_mode():
        for start in range(0, len(x), _BATCH):
            parts.append(model(x[start : start + _BATCH]).argmax(dim=1))
    return torch.cat(parts).numpy() if parts else torch.zeros(0, dtype=torch.int64).numpy()


def predict(
    ctx: typer.Context,
    data: Annotated[Path, typer.Argument(help="Raw rows: a CSV (or .csv.gz) as uploaded.")],
    model: Annotated[
        Path, typer.Option("--model", "-m", help="final.pt or final.safetensors.")
    ] = Path("model.pt"),
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write predictions here (default: stdout)."),
    ] = None,
    holdout: Annotated[
        bool,
        typer.Option(
            "--holdout",
            help="Only the job's holdout rows (DATA must be the uploaded file, with labels).",
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="The summary as JSON.")] = False,
) -> None:
    """Predict class names for raw rows with a downloaded model.

    Writes ``row,prediction[,label]`` (row: the data row's number in the file, from 1).
    When the label column is present it prints the accuracy; with ``--holdout`` on the
    rows the job evaluated on, it is the job's reported holdout accuracy.
    """
    state = state_of(ctx)
    export = _export()
    net, prep = _load(export, model)
    if prep.kind != "table":
        raise ClientError(f"{model} reads {prep.kind}; predict reads tables (CSV) only")
    try:
        table = prep.read(data)
    except (OSError, ValueError) as exc:
        raise ClientError(f"{data}: {exc}") from None
    rows = len(next(iter(table.values()))) if table else 0
    label = prep.label_column if prep.label_column in table else None
    labels = prep.labels(table[label]) if label else None
    import numpy as np

    chosen = np.arange(rows)
    if holdout:
        if labels is None:
            raise ClientError(f"--holdout needs the label column {prep.label_column!r} in {data}")
        try:
            chosen = np.flatnonzero(prep.holdout_mask(labels))
        except export.ExportError as exc:
            raise ClientError(f"--holdout: {exc}") from None
    subset = {name: cells[chosen] for name, cells in table.items()}
    try:
        x = prep(subset)
    except (export.ExportError, ValueError) as exc:
        raise ClientError(f"{data}: {exc}") from None
    index = _predicted(net, x)
    names = prep.classes
    text = io.StringIO()
    out = csv.writer(text, lineterminator="\n")
    out.writerow(["row", "prediction", *([label] if label else [])])
    for k, (row, i) in enumerate(zip(chosen, index, strict=True)):
        extra = [subset[label][k].strip()] if label else []
        out.writerow([int(row) + 1, names[int(i)], *extra])
    if output is None:
        sys.stdout.write(text.getvalue())
    else:
        output.write_text(text.getvalue())
    summary: dict[str, Any] = {"rows": len(chosen), "holdout": holdout}
    if labels is not None and len(chosen):
        summary["accuracy"] = float((index == labels[chosen]).mean())
    if json_out:
        typer.echo(json.dumps(summary), err=output is None)
    elif "accuracy" in summary:
        where = "holdout rows" if holdout else "rows"
        state.err.print(f"accuracy {summary['accuracy']:.4f} on {len(chosen)} {where}")
    if output is not None and not json_out:
        state.err.print(f"wrote {len(chosen)} predictions to {output}")


def convert(
    ctx: typer.Context,
    model: Annotated[Path, typer.Argument(help="final.pt or final.safetensors.")],
    fmt: Annotated[
        Literal["onnx"], typer.Option("--format", help="onnx (preprocessing included)")
    ] = "onnx",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Default: MODEL with .onnx")
    ] = None,
) -> None:
    """Convert a downloaded model: ONNX with the preprocessing in the graph."""
    state = state_of(ctx)
    export = _export()
    if not model.is_file():
        raise ClientError(f"no model file {model}")
    dest = output or model.with_suffix(f".{fmt}")
    try:
        data = export.onnx_bytes(model)
    except (export.ExportError, ValueError, RuntimeError) as exc:
        raise ClientError(f"{model}: {exc}") from None
    dest.write_bytes(data)
    state.err.print(f"wrote {dest} (input 'raw' or 'pixels'; see its peertrain.* metadata)")
