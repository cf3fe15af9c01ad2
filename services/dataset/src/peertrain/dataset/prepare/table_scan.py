"""The one parsing pass over a table upload: types, labels, preview, scratch columns.

CSV texts are parsed by Arrow's streaming reader (every column as a string, one block
at a time), cells are trimmed, and each column's :class:`~.columns.ColumnProfile`
learns its type. Arrow's errors are turned into rejections that name the line, found
again with Python's ``csv`` module when Arrow does not say.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from peertrain.dataset.domain.errors import (
    EmptyFile,
    FieldTooLarge,
    InvalidDataset,
    MissingLabel,
    MissingLabelColumn,
    NotUtf8,
    TooManyClasses,
    TooManyColumns,
    TooManyRows,
)
from peertrain.dataset.domain.limits import Limits
from peertrain.dataset.ingest.limits import InflateBudget
from peertrain.dataset.ingest.text import CsvLayout, line_of_record, locate_ragged, scan_records
from peertrain.dataset.ingest.upload import TextSource, UploadedFile

from .columns import ColumnProfile, MissingCells

__all__ = ["TableScan", "scan_table"]

_WORKERS = 2


@dataclass
class TableScan:
    """What the parsing pass learned (scratch files stay until encoding)."""

    columns: tuple[str, ...]
    label_index: int
    features: list[ColumnProfile]
    label: ColumnProfile
    missing: MissingCells
    rows: int = 0
    preview: list[list[str]] = field(default_factory=list)
    labels_path: Path | None = None

    @property
    def label_column(self) -> str:
        """The label column's name."""
        return self.columns[self.label_index]


def _label_index(columns: tuple[str, ...], wanted: str | None) -> int:
    if wanted is None:
        return len(columns) - 1
    if wanted not in columns:
        raise MissingLabelColumn(
            f"there is no label column {wanted!r}; the columns are {', '.join(columns[:20])}",
            column=wanted,
        )
    return columns.index(wanted)


def _reader(stream: BinaryIO | str, layout: CsvLayout, limits: Limits) -> pcsv.CSVStreamingReader:
    names = [f"c{i}" for i in range(len(layout.columns))]
    return pcsv.open_csv(
        stream,
        read_options=pcsv.ReadOptions(
            use_threads=False, block_size=limits.block_bytes, column_names=names, skip_rows=1
        ),
        parse_options=pcsv.ParseOptions(delimiter=layout.delimiter, newlines_in_values=True),
        convert_options=pcsv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.string()),
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            check_utf8=True,
        ),
    )


def _batches(
    upload: UploadedFile, source: TextSource, layout: CsvLayout, budget: InflateBudget
) -> Iterator[pa.RecordBatch]:
    """Arrow batches of one CSV text, with Arrow's parse errors made into rejections."""
    with source.open(budget) as stream:
        try:
            native = str(source.path) if source.path is not None else None
            reader = _reader(native or stream, layout, upload.limits)
        except pa.ArrowInvalid as exc:
            if "Empty CSV" in str(exc):
                raise EmptyFile(f"{source.name} has a header but no rows") from None
            _explain(upload, source, layout, exc)
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except pa.ArrowInvalid as exc:
                _explain(upload, source, layout, exc)
            yield batch


def _explain(
    upload: UploadedFile, source: TextSource, layout: CsvLayout, exc: pa.ArrowInvalid
) -> None:
    message = str(exc)
    if "Expected" in message and "columns" in message:
        locate_ragged(lambda: source.open(upload.budget()), layout, source.name)
        raise InvalidDataset(f"{source.name} has rows of uneven length: {message}") from None
    if "UTF8" in message or "UTF-8" in message:
        for _ in scan_records(lambda: source.open(upload.budget()), layout, source.name):
            pass
        raise NotUtf8(f"{source.name} is not UTF-8 text") from None
    if "straddling" in message or "block" in message:
        raise FieldTooLarge(
            f"{source.name} has a row longer than {upload.limits.block_bytes} bytes "
            f"(fields are limited to {upload.limits.max_field_bytes} bytes)",
            entry=source.name,
        ) from None
    raise InvalidDataset(f"{source.name} is not valid CSV: {message}", entry=source.name) from None


def _check_fields(
    upload: UploadedFile,
    source: TextSource,
    layout: CsvLayout,
    batch: pa.RecordBatch,
    first_record: int,
    pool: ThreadPoolExecutor,
) -> None:
    limit = upload.limits.max_field_bytes
    longest = list(pool.map(lambda c: pc.max(pc.binary_length(c)).as_py(), batch.columns))
    for i, column in enumerate(batch.columns):
        if longest[i] is not None and longest[i] > limit:
            lengths = pc.binary_length(column)
            row = int(np.argmax(lengths.to_numpy(zero_copy_only=False) > limit))
            line = line_of_record(
                lambda: source.open(upload.budget()),
                layout,
                source.name,
                first_record + row,
            )
            where = f"line {line}" if line else f"record {first_record + row + 1}"
            raise FieldTooLarge(
                f"a field of column {layout.columns[i]!r} on {where} of {source.name} is over "
                f"{limit} bytes",
                column=layout.columns[i],
                line=line,
                entry=source.name,
            )


def _missing_label(
    upload: UploadedFile,
    source: TextSource,
    layout: CsvLayout,
    record: int,
    column: str,
    value: str,
) -> MissingLabel:
    line = line_of_record(
        lambda: source.open(upload.budget()),
        layout,
        source.name,
        record,
    )
    where = f"line {line}" if line else f"record {record + 1}"
    read_as = f" ({value!r} is read as missing)" if value else ""
    return MissingLabel(
        f"the label ({column!r}) is missing on {where} of {source.name}{read_as}",
        line=line,
        column=column,
        entry=source.name,
    )


def _add_values(missing: MissingCells, profile: ColumnProfile, values: pa.Array) -> None:
    profile.add(values, missing.mask(values))


def _add_labels(
    upload: UploadedFile,
    source: TextSource,
    layout: CsvLayout,
    scan: TableScan,
    values: pa.Array,
    source_first: int,
) -> None:
    missing = scan.missing.mask(values)
    column = scan.label_column
    if missing.any():
        row = int(np.argmax(missing))
        value = str(values[row].as_py())
        raise _missing_label(upload, source, layout, source_first + row, column, value)
    if scan.label.add(values, missing) is None:
        limit = upload.limits.max_classes
        raise TooManyClasses(
            f"the label column {column!r} has more than {limit} classes",
            column=column,
            max_classes=limit,
        )


def scan_table(
    upload: UploadedFile, scratch: Path, label_column: str | None, missing_values: Sequence[str]
) -> TableScan:
    """Parse every CSV text of ``upload`` once; profile each column.

    A cell is missing when, trimmed, it is one of ``missing_values`` (ignoring case).

    Raises
    ------
    InvalidDataset
        With the reason (a subclass) and where it happened.
    """
    limits = upload.limits
    sources = upload.text_sources()
    layouts = [upload.layout(s) for s in sources]
    columns = layouts[0].columns
    for source, layout in zip(sources[1:], layouts[1:], strict=True):
        if layout.columns != columns:
            raise InvalidDataset(
                f"{source.name} does not have the same header as {sources[0].name}",
                entry=source.name,
            )
    if len(columns) > limits.max_columns:
        raise TooManyColumns(
            f"{len(columns)} columns is more than the limit of {limits.max_columns}",
            columns=len(columns),
        )
    label_index = _label_index(columns, label_column)
    features = [
        ColumnProfile(name, scratch / f"col{i}", limits.max_categories)
        for i, name in enumerate(columns)
        if i != label_index
    ]
    label = ColumnProfile(
        columns[label_index], scratch / "label", limits.max_classes, scalars=False
    )
    scan = TableScan(columns, label_index, features, label, MissingCells(missing_values))
    budget = upload.budget()
    # Columns are independent: Arrow and NumPy release the GIL, so two threads use both
    # cores of a small machine on the per-column work of each batch.
    with ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="scan") as pool:
        for source, layout in zip(sources, layouts, strict=True):
            source_first = 0
            for batch in _batches(upload, source, layout, budget):
                _check_fields(upload, source, layout, batch, source_first, pool)
                scan.rows += batch.num_rows
                if scan.rows > limits.max_rows:
                    raise TooManyRows(f"more than {limits.max_rows} rows", max_rows=limits.max_rows)
                trimmed = list(pool.map(pc.utf8_trim_whitespace, batch.columns))
                if len(scan.preview) < limits.preview_rows:
                    take = limits.preview_rows - len(scan.preview)
                    head = [c.slice(0, take).to_pylist() for c in trimmed]
                    scan.preview.extend([list(r) for r in zip(*head, strict=True)])
                _add_labels(upload, source, layout, scan, trimmed[label_index], source_first)
                values = [v for i, v in enumerate(trimmed) if i != label_index]
                list(pool.map(partial(_add_values, scan.missing), features, values))
                source_first += batch.num_rows
            if source_first == 0:
                raise EmptyFile(f"{source.name} has a header but no rows", entry=source.name)
    for profile in (*features, label):
        profile.finish()
    scan.labels_path = label.codes_path
    return scan


def preview_document(scan: TableScan) -> dict[str, Any]:
    """The first rows as the user wrote them (trimmed), with the header."""
    return {"kind": "table", "columns": list(scan.columns), "rows": scan.preview}
