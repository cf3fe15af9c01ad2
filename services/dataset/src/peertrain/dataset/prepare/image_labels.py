"""Labels of an image archive from its CSV of file names and labels.

The other layout of an image ``.zip`` (besides one folder per class): the images
anywhere in the archive and one CSV naming them, e.g. ``labels.csv``::

    file,label
    img/0001.png,cat
    img/0002.png,dog

The file column is the one whose every value names an image of the archive (as a path
from the archive's root, or from the CSV's own folder); the label column is the upload's
``label_column``, else the only other column, else the one called ``label``, ``class``,
``target`` or ``y``. Every row must name an image that exists, once; images the CSV does
not name are left out of the dataset (and counted in its preview).
"""

from __future__ import annotations

import csv
import io
import posixpath

from peertrain.common.features import MAX_IMAGE_BYTES
from peertrain.dataset.domain.errors import (
    InvalidDataset,
    MissingLabel,
    MissingLabelColumn,
    NotUtf8,
)
from peertrain.dataset.ingest.archive import ArchiveEntry
from peertrain.dataset.ingest.text import sniff_layout
from peertrain.dataset.ingest.upload import UploadedFile

__all__ = ["LABEL_NAMES", "labels_from_csv"]

LABEL_NAMES = ("label", "class", "target", "y")
"""Column names taken for the label when the CSV has more than two columns."""


def _rows(upload: UploadedFile, entry: ArchiveEntry) -> tuple[tuple[str, ...], list[list[str]]]:
    with upload.open_entry(entry, upload.budget()) as stream:
        data = stream.read(MAX_IMAGE_BYTES + 1)
    if len(data) > MAX_IMAGE_BYTES:
        raise InvalidDataset(
            f"{entry.name!r} is larger than {MAX_IMAGE_BYTES} bytes", entry=entry.name
        )
    layout = sniff_layout(data[:65536], complete=len(data) <= 65536, name=entry.name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise NotUtf8(f"{entry.name} is not UTF-8 text (line {line})", line=line) from None
    records = [r for r in csv.reader(io.StringIO(text), delimiter=layout.delimiter) if r]
    return layout.columns, [[cell.strip() for cell in r] for r in records[1:]]


def _resolve(name: str, folder: str, images: dict[str, ArchiveEntry]) -> ArchiveEntry | None:
    name = name.replace("\\", "/")
    for candidate in (posixpath.join(folder, name) if folder else name, name):
        found = images.get(posixpath.normpath(candidate))
        if found is not None:
            return found
    return None


def _label_column(columns: tuple[str, ...], file_column: int, wanted: str | None) -> int:
    others = [i for i in range(len(columns)) if i != file_column]
    if wanted is not None:
        if wanted not in columns:
            raise MissingLabelColumn(
                f"the labels CSV has no column {wanted!r} (it has {', '.join(columns)})",
                column=wanted,
            )
        return columns.index(wanted)
    if len(others) == 1:
        return others[0]
    named = [i for i in others if columns[i].lower() in LABEL_NAMES]
    if len(named) == 1:
        return named[0]
    raise MissingLabelColumn(
        f"the labels CSV has columns {', '.join(columns)}: say which is the label (label_column)",
        column=None,
    )


def labels_from_csv(
    upload: UploadedFile,
    entries: list[ArchiveEntry],
    labels_entry: ArchiveEntry,
    wanted: str | None,
) -> tuple[list[ArchiveEntry], list[str], int]:
    """The images the CSV names (in the archive's name order), their labels, and how
    many images it does not name.

    Raises
    ------
    InvalidDataset
        No column names the images; a row naming a missing image, or one named twice;
        an empty label; no label column to be found.
    """
    columns, rows = _rows(upload, labels_entry)
    images = {e.name: e for e in entries}
    folder = posixpath.dirname(labels_entry.name)
    width = len(columns)
    for number, row in enumerate(rows, start=2):
        if len(row) != width:
            raise InvalidDataset(
                f"{labels_entry.name} line {number} has {len(row)} fields, the header {width}",
                line=number,
            )
    if not rows:
        raise InvalidDataset(f"{labels_entry.name} names no images", entry=labels_entry.name)
    file_column = next(
        (c for c in range(width) if _resolve(rows[0][c], folder, images) is not None), None
    )
    if file_column is None:
        raise InvalidDataset(
            f"no column of {labels_entry.name} names an image of the archive "
            f"(its first row: {rows[0]!r})",
            entry=labels_entry.name,
        )
    label_column = _label_column(columns, file_column, wanted)
    chosen: dict[str, str] = {}
    for number, row in enumerate(rows, start=2):
        entry = _resolve(row[file_column], folder, images)
        if entry is None:
            raise InvalidDataset(
                f"{labels_entry.name} line {number} names {row[file_column]!r}, "
                "which is not an image of the archive",
                line=number,
            )
        if entry.name in chosen:
            raise InvalidDataset(
                f"{labels_entry.name} line {number} names {entry.name!r} again", line=number
            )
        if not row[label_column]:
            raise MissingLabel(f"{labels_entry.name} line {number} has no label", line=number)
        chosen[entry.name] = row[label_column]
    kept = [e for e in entries if e.name in chosen]
    return kept, [chosen[e.name] for e in kept], len(entries) - len(kept)
