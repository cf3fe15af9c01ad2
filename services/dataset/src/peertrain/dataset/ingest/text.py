"""CSV text: the delimiter and header from the first bytes, and locating bad lines.

The fast path parses with Arrow; when Arrow reports a problem without a usable line
number, :func:`scan_records` reads the text again with Python's ``csv`` module, line by
line, to name the physical line (an error path only).
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import BinaryIO

from peertrain.dataset.domain.errors import (
    EmptyFile,
    InvalidDataset,
    NotCsvOrZip,
    NotUtf8,
    RaggedRow,
)

from .formats import check_text

__all__ = [
    "DELIMITERS",
    "HEADER_WINDOW",
    "CsvLayout",
    "Record",
    "line_of_record",
    "locate_ragged",
    "scan_records",
    "sniff_layout",
]

DELIMITERS = (",", ";", "\t")
HEADER_WINDOW = 1024 * 1024
"""The header row must end within the first MiB."""
_SAMPLE_RECORDS = 50
_BOM = "\ufeff"

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


@dataclass(frozen=True)
class CsvLayout:
    """How a CSV file is laid out: its delimiter and (trimmed) column names."""

    delimiter: str
    columns: tuple[str, ...]


def _records(text: str, delimiter: str) -> list[list[str]]:
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    out: list[list[str]] = []
    try:
        for row in reader:
            if row:
                out.append(row)
            if len(out) >= _SAMPLE_RECORDS:
                break
    except csv.Error:
        pass
    return out


def sniff_layout(prefix: bytes, *, complete: bool, name: str) -> CsvLayout:
    """Find the delimiter (comma, semicolon or tab) and the header of a CSV text.

    The candidate whose header has several fields and whose first records agree with
    it best wins; ties go to the one with more fields, then comma > semicolon > tab.

    Raises
    ------
    EmptyFile, NotCsvOrZip, NotUtf8, InvalidDataset
        Nothing there, not text / no delimiter, not UTF-8, or a bad header.
    """
    text = check_text(prefix, complete=complete, name=name)
    text = text.removeprefix(_BOM)
    if not complete:
        cut = text.rfind("\n")
        if cut < 0:
            raise InvalidDataset(
                f"the header row of {name} is longer than {HEADER_WINDOW} bytes", entry=name
            )
        text = text[: cut + 1]
    if not text.strip():
        raise EmptyFile(f"{name} is empty", entry=name)
    best: tuple[tuple[bool, float, int, int], str, list[str]] | None = None
    for rank, delimiter in enumerate(DELIMITERS):
        rows = _records(text, delimiter)
        if not rows:
            continue
        width = len(rows[0])
        agree = sum(1 for r in rows if len(r) == width) / len(rows)
        score = (width > 1, agree, width, -rank)
        if best is None or score > best[0]:
            best = (score, delimiter, rows[0])
    if best is None or not best[0][0]:
        raise NotCsvOrZip(
            f"{name} is not CSV: no comma, semicolon or tab separates at least two columns",
            entry=name,
        )
    _, delimiter, header = best
    columns = tuple(h.strip() for h in header)
    blank = [i + 1 for i, c in enumerate(columns) if not c]
    if blank:
        raise InvalidDataset(
            f"column {blank[0]} of {name} has no name in the header row", column=blank[0]
        )
    seen: set[str] = set()
    for c in columns:
        if c in seen:
            raise InvalidDataset(f"column name {c!r} appears twice in the header", column=c)
        seen.add(c)
    return CsvLayout(delimiter, columns)


@dataclass(frozen=True)
class Record:
    """One CSV record: its index among data records, where it starts, its fields."""

    index: int
    line: int
    fields: list[str]


def _decoded_lines(stream: BinaryIO, name: str, counter: list[int]) -> Iterator[str]:
    for raw in stream:
        counter[0] += 1
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise NotUtf8(
                f"{name} is not UTF-8 text (line {counter[0]})", line=counter[0], entry=name
            ) from None
        if counter[0] == 1:
            line = line.removeprefix(_BOM)
        yield line


def scan_records(
    open_stream: Callable[[], AbstractContextManager[BinaryIO]], layout: CsvLayout, name: str
) -> Iterator[Record]:
    """Every data record after the header, with the physical line it starts on.

    Raises
    ------
    NotUtf8
        At the first line that is not UTF-8.
    """
    counter = [0]
    with open_stream() as stream:
        reader = csv.reader(_decoded_lines(stream, name, counter), delimiter=layout.delimiter)
        header_done = False
        index = 0
        last_line = 0
        for fields in reader:
            start = last_line + 1
            last_line = counter[0]
            if not fields:
                continue
            if not header_done:
                header_done = True
                continue
            yield Record(index, start, fields)
            index += 1


def locate_ragged(
    open_stream: Callable[[], AbstractContextManager[BinaryIO]], layout: CsvLayout, name: str
) -> None:
    """Raise :class:`~peertrain.dataset.domain.errors.RaggedRow` at the first ragged line."""
    width = len(layout.columns)
    try:
        for record in scan_records(open_stream, layout, name):
            if len(record.fields) != width:
                raise RaggedRow(
                    f"line {record.line} of {name} has {len(record.fields)} fields, "
                    f"the header has {width}",
                    line=record.line,
                    entry=name,
                    expected=width,
                    found=len(record.fields),
                )
    except csv.Error as exc:
        raise InvalidDataset(f"{name} is not valid CSV: {exc}", entry=name) from None


def line_of_record(
    open_stream: Callable[[], AbstractContextManager[BinaryIO]],
    layout: CsvLayout,
    name: str,
    index: int,
) -> int | None:
    """The physical line on which data record ``index`` starts (None if not found)."""
    try:
        for record in scan_records(open_stream, layout, name):
            if record.index == index:
                return record.line
    except (csv.Error, NotUtf8):
        return None
    return None
