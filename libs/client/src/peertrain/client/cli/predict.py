"""``peertrain predict`` and ``peertrain convert``: a downloaded model, used locally.

Both need torch and numpy (peertrain-ml's :mod:`peertrain.ml.export`), imported when a
command runs, so the rest of the CLI works without them. No server is involved.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def _rows_out(output: Path | None) -> Iterator[Any]:
    """A CSV writer on ``output`` (removed again if predicting fails), else on stdout."""
    if output is None:
        yield csv.writer(sys.stdout, lineterminator="\n")
        return
    try:
        with output.open("w", newline="") as f:
            yield csv.writer(f, lineterminator="\n")
    except BaseException:
        output.unlink(missing_ok=True)
        raise


def _known(raw: Any, labels: Any, holdout: bool) -> dict[str, Any]:
    """The summary's count of labels the model lacks (refused with ``--holdout``)."""
    unknown = labels < 0
    if not unknown.any():
        return {"unknown_labels": 0}
    examples = list(dict.fromkeys(str(raw[i]).strip() for i in unknown.nonzero()[0]))[:3]
    if holdout:
        raise ClientError(
            f"--holdout: {int(unknown.sum())} labels are not among the model's classes "
            f"(e.g. {', '.join(map(repr, examples))}): the holdout is found only in the "
            "very data that was uploaded"
        )
    return {"unknown_labels": int(unknown.sum()), "unknown_examples": examples}


def _scored(summary: dict[str, Any], index: Any, labels: Any) -> None:
    """Accuracy on the rows whose label the model knows."""
    known = labels >= 0
    if known.any():
        summary["accuracy"] = float((index[known] == labels[known]).mean())
        summary["scored"] = int(known.sum())


def _report(
    state: Any, summary: dict[str, Any], classes: Any, output: Path | None, json_out: bool
) -> None:
    rows, unknown = summary["rows"], summary.get("unknown_labels", 0)
    if unknown:
        examples = ", ".join(map(repr, summary["unknown_examples"]))
        model_has = ", ".join(map(repr, classes[:5])) + (", ..." if len(classes) > 5 else "")
        if unknown == rows:
            state.err.print(
                f"no label is one of the model's classes (e.g. {examples}; the model's: "
                f"{model_has}): no accuracy"
            )
        else:
            state.err.print(
                f"{unknown} of {rows} labels are not among the model's classes "
                f"(e.g. {examples}): not scored"
            )
    if json_out:
        # the predictions own stdout unless they go to a file: then the summary does
        typer.echo(json.dumps(summary), err=output is None)
    elif "accuracy" in summary:
        where = "holdout rows" if summary["holdout"] else "rows"
        state.err.print(f"accuracy {summary['accuracy']:.4f} on {summary['scored']} {where}")
    if output is not None and not json_out:
        state.err.print(f"wrote {rows} predictions to {output}")


def _table(
    export: Any, net: Any, prep: Any, data: Path, output: Path | None, holdout: bool
) -> dict[str, Any]:
    try:
        table = prep.read(data)
    except (OSError, ValueError) as exc:
        raise ClientError(f"{data}: {exc}") from None
    rows = len(next(iter(table.values()))) if table else 0
    label = prep.label_column if prep.label_column in table else None
    labels = prep.labels(table[label]) if label else None
    import numpy as np

    chosen = np.arange(rows)
    summary: dict[str, Any] = {"rows": rows, "holdout": holdout}
    if labels is None and holdout:
        raise ClientError(f"--holdout needs the label column {prep.label_column!r} in {data}")
    if labels is not None:
        summary |= _known(table[label], labels, holdout)
    if holdout:
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
    with _rows_out(output) as out:
        out.writerow(["row", "prediction", *([label] if label else [])])
        for k, (row, i) in enumerate(zip(chosen, index, strict=True)):
            extra = [subset[label][k].strip()] if label else []
            out.writerow([int(row) + 1, names[int(i)], *extra])
    summary["rows"] = len(chosen)
    if labels is not None:
        _scored(summary, index, labels[chosen])
    return summary


def _images(
    export: Any, net: Any, prep: Any, data: Path, output: Path | None, holdout: bool, state: Any
) -> dict[str, Any]:
    from peertrain.common.features import UnreadableImage

    try:
        files = prep.read_images(data)
    except (OSError, ValueError) as exc:
        raise ClientError(f"{data}: {exc}") from None
    if files.ignored:
        state.err.print(
            f"ignored {len(files.ignored)} files that are not .png/.jpg/.jpeg images "
            f"(e.g. {files.ignored[0]!r})"
        )
    summary: dict[str, Any] = {"rows": len(files), "holdout": holdout}
    summary["ignored_files"] = len(files.ignored)
    labels: Any = None if files.labels is None else prep.labels(files.labels)
    if holdout and files.holdout_refusal:
        raise ClientError(f"--holdout: {files.holdout_refusal}")
    if labels is not None:
        summary |= _known(files.labels, labels, holdout)
    if holdout:
        try:
            mask = prep.holdout_mask(labels)
        except export.ExportError as exc:
            raise ClientError(f"--holdout: {exc}") from None
        files, labels = files.subset(mask), labels[mask]
    import numpy as np

    names, found = prep.classes, files.labels
    done: list[int] = []
    try:
        with _rows_out(output) as out:
            out.writerow(["file", "prediction", *(["label"] if found is not None else [])])
            for pixels in files.pixels(prep.image):
                for i in _predicted(net, prep(pixels)):
                    k = len(done)
                    out.writerow([files.names[k], names[int(i)], *([found[k]] if found else [])])
                    done.append(int(i))
    except UnreadableImage as exc:
        raise ClientError(f"{data}: {exc}") from None
    summary["rows"] = len(files)
    if labels is not None:
        _scored(summary, np.array(done, dtype=np.int64), labels)
    return summary


def predict(
    ctx: typer.Context,
    data: Annotated[
        Path,
        typer.Argument(
            help="Raw data as uploaded: a CSV (or .csv.gz) for a table model; "
            "a folder or .zip of images for an image model."
        ),
    ],
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
    json_out: Annotated[
        bool,
        typer.Option("--json", help="The summary as JSON (on stdout with -o, else on stderr)."),
    ] = False,
) -> None:
    """Predict class names for raw rows or images with a downloaded model.

    Tables: writes ``row,prediction[,label]`` (row: the data row's number in the file,
    from 1). Images (PNG/JPEG in a folder or .zip; ``<class>/<file>`` folders give the
    labels): writes ``file,prediction[,label]`` (file: the path inside DATA); other files
    are ignored and counted; an unreadable image stops it, named. With labels it prints
    the accuracy (labels the model lacks are counted, not scored); with ``--holdout``
    on the rows the job evaluated on, it is the job's reported holdout accuracy.
    """
    state = state_of(ctx)
    export = _export()
    net, prep = _load(export, model)
    if prep.kind == "images":
        summary = _images(export, net, prep, data, output, holdout, state)
    else:
        summary = _table(export, net, prep, data, output, holdout)
    _report(state, summary, prep.classes, output, json_out)


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
