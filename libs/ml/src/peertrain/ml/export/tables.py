"""Reading a table in the upload's own format: CSV (optionally gzip), comma/semicolon/tab.

Standard library only. Cells stay strings (the feature spec says how to read them).
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = ["Table", "read_table"]

_DELIMITERS = (",", ";", "\t")
_BOM = "\ufeff"
_BLOCK_ROWS = 2048

Table = dict[str, NDArray[np.str_]]
"""Column name -> that column's cells (strings), in file order."""


def _open_text(path: Path) -> io.TextIOBase:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return io.TextIOWrapper(path.open("rb"), encoding="utf-8", newline="")


def _delimiter(header_line: str, wanted: Iterable[str]) -> str:
    """The delimiter whose header names the most of ``wanted`` (then: the most fields)."""
    want = set(wanted)
    best = max(
        _DELIMITERS,
        key=lambda d: (
            len(want & {c.strip() for c in next(csv.reader([header_line], delimiter=d))}),
            len(header_line.split(d)),
        ),
    )
    return best


def read_table(path: str | Path, expected: Iterable[str] = ()) -> Table:
    """The CSV at ``path`` (plain or gzip) as one array of trimmed-name columns.

    ``expected`` are column names the file should have; they pick the delimiter.

    Raises
    ------
    ValueError
        No header, duplicate names, or rows of uneven length (with the line).
    """
    with _open_text(Path(path)) as text:
        first = text.readline().removeprefix(_BOM)
        if not first.strip():
            raise ValueError(f"{path} has no header row")
        delimiter = _delimiter(first.rstrip("\r\n"), expected)
        header = [c.strip() for c in next(csv.reader([first], delimiter=delimiter))]
        if len(set(header)) != len(header):
            raise ValueError(f"{path}: a column name appears twice in the header")
        blocks: list[NDArray[np.str_]] = []
        rows: list[list[str]] = []
        for line, row in enumerate(csv.reader(text, delimiter=delimiter), start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise ValueError(
                    f"{path}: the row near line {line} has {len(row)} fields, "
                    f"the header {len(header)}"
                )
            rows.append(row)
            if len(rows) == _BLOCK_ROWS:  # bounded Python objects: a block at a time
                blocks.append(np.array(rows, dtype=str))
                rows = []
        blocks.append(np.array(rows, dtype=str).reshape(len(rows), len(header)))
    width = max(b.dtype.itemsize for b in blocks) // 4
    cells = np.concatenate([b.astype(f"<U{max(width, 1)}") for b in blocks])
    return {name: cells[:, i] for i, name in enumerate(header)}
