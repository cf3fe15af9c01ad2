"""Encoding a scanned table: types decided, holdout split, statistics, feature matrix.

Policy (documented in the feature spec each consumer receives):

* numeric columns: missing -> median of the training part; then standardised with the
  training part's mean and standard deviation (over its present values; std 1 when
  constant); in a column kept numeric although a few cells are not numbers
  (:mod:`.column_types`), those cells are missing too;
* boolean columns: 1 for ``true``/``yes``, 0 for ``false``/``no``; missing -> median of
  the training part; not standardised;
* categorical columns: one-hot over the sorted categories, plus one "missing" column
  when the column has missing values (they are their own category);
* columns with no value at all are listed in the schema as ``empty`` and not encoded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray

from peertrain.common.events.datasets import (
    ColumnEncoding,
    ColumnSchema,
    FeatureSpec,
    HoldoutRule,
)
from peertrain.common.features import encode_column
from peertrain.dataset.domain.errors import SingleClass, TooManyCategories, TooManyColumns
from peertrain.dataset.domain.holdout import stratified_holdout
from peertrain.dataset.domain.limits import Limits

from .column_types import decide_type
from .options import PrepareOptions
from .result import PreparedDataset
from .split import write_split
from .table_scan import TableScan, preview_document

__all__ = ["encode_table"]

_BLOCK_CELLS = 4 * 1024 * 1024  # float32 cells per encoded block (16 MiB)
_STAT_CHUNK = 1 << 20


@dataclass
class _Encoder:
    """One feature column's encoding and the scratch file it reads from."""

    spec: ColumnEncoding
    path: Path
    remap: NDArray[np.int32] | None = None

    @cached_property
    def column(self) -> dict[str, Any]:
        """The encoding in its JSON form, as :func:`encode_column` takes it."""
        return self.spec.model_dump(mode="json")


def _labels(scan: TableScan, limits: Limits) -> tuple[list[str], NDArray[np.int32]]:
    classes, remap = scan.label.categories()
    if len(classes) < 2:
        only = classes[0] if classes else ""
        raise SingleClass(
            f"the label column {scan.label_column!r} has a single class ({only!r}): "
            "there is nothing to classify",
            column=scan.label_column,
        )
    assert scan.labels_path is not None
    labels: NDArray[np.int32] = remap[np.fromfile(scan.labels_path, dtype=np.int32)]
    return classes, labels


def _column_stats(
    values: NDArray[np.float32], train: NDArray[np.bool_]
) -> tuple[float, float, float]:
    """(fill, mean, std) from the training rows' present values.

    Sums run in float64 over float32 chunks, so memory stays a few copies of the
    float32 column, not of a float64 one.
    """
    present = values[train & ~np.isnan(values)]
    if len(present) == 0:
        return 0.0, 0.0, 1.0
    mean = float(np.mean(present, dtype=np.float64))
    squares = 0.0
    for start in range(0, len(present), _STAT_CHUNK):
        chunk = present[start : start + _STAT_CHUNK].astype(np.float64) - mean
        squares += float(np.dot(chunk, chunk))
    std = (squares / len(present)) ** 0.5
    fill = float(np.median(present, overwrite_input=True))  # last use: no copy
    return fill, mean, (std if std > 1e-12 else 1.0)


def _encoders(
    scan: TableScan, train: NDArray[np.bool_], limits: Limits
) -> tuple[list[_Encoder], list[ColumnSchema], list[str]]:
    encoders: list[_Encoder] = []
    schema: list[ColumnSchema] = []
    notes: list[str] = []
    offset = 0
    for profile in scan.features:
        decided = decide_type(profile.name, profile.counts, limits.max_categories)
        kind = decided.kind
        if kind == "overflow":
            raise TooManyCategories(
                f"column {profile.name!r} has more than {limits.max_categories} distinct "
                "values (the cardinality cap for categorical columns): drop it, or make it "
                "numeric",
                column=profile.name,
                max_categories=limits.max_categories,
            )
        schema.append(
            ColumnSchema(
                name=profile.name,
                type=kind,
                missing=profile.missing + decided.non_numbers,
                distinct=profile.counts.distinct,
                reason=decided.reason,
                non_numbers=decided.non_numbers,
                non_number_examples=decided.examples,
            )
        )
        if decided.note is not None:
            notes.append(decided.note)
        if kind == "empty":
            continue
        if kind in ("numeric", "boolean"):
            path = profile.scalar_path if kind == "numeric" else profile.boolean_path
            values = np.fromfile(path, dtype=np.float32)
            fill, mean, std = _column_stats(values, train)
            if kind == "boolean":
                mean, std = 0.0, 1.0
            del values
            spec = ColumnEncoding(
                name=profile.name,
                type=kind,
                offset=offset,
                width=1,
                fill=fill,
                mean=mean,
                std=std,
                non_numbers_missing=decided.non_numbers > 0,
            )
            encoders.append(_Encoder(spec, path))
        else:
            categories, remap = profile.categories()
            has_missing = profile.missing > 0
            spec = ColumnEncoding(
                name=profile.name,
                type="categorical",
                offset=offset,
                width=len(categories) + int(has_missing),
                categories=tuple(categories),
                missing_category=has_missing,
            )
            encoders.append(_Encoder(spec, profile.codes_path, remap))
        offset += spec.width
    classes = len(scan.label.codes)
    schema.append(
        ColumnSchema(
            name=scan.label_column,
            type="label",
            missing=0,
            distinct=classes,
            reason=f"label: {classes} classes",
        )
    )
    if offset > limits.max_features:
        raise TooManyColumns(
            f"the encoded table has {offset} features, more than the limit of "
            f"{limits.max_features}",
            features=offset,
        )
    if offset == 0:
        raise TooManyColumns("no column besides the label has any value", features=0)
    return encoders, schema, notes


def _blocks(encoders: list[_Encoder], rows: int, width: int) -> Iterator[NDArray[np.float32]]:
    block_rows = max(1, _BLOCK_CELLS // max(width, 1))
    files: list[BinaryIO] = [e.path.open("rb") for e in encoders]
    try:
        for start in range(0, rows, block_rows):
            n = min(block_rows, rows - start)
            block = np.zeros((n, width), dtype=np.float32)
            for enc, f in zip(encoders, files, strict=True):
                if enc.remap is None:
                    values = np.fromfile(f, dtype=np.float32, count=n)
                else:  # first-seen codes -> sorted category index (-1: missing)
                    codes = np.fromfile(f, dtype=np.int32, count=n)
                    values = np.where(codes < 0, -1, enc.remap[np.maximum(codes, 0)])
                encode_column(block, enc.column, values)
            yield block
    finally:
        for f in files:
            f.close()


def encode_table(
    scan: TableScan, scratch: Path, options: PrepareOptions, limits: Limits
) -> PreparedDataset:
    """Decide types, split off the holdout, compute statistics, write the encoded parts."""
    classes, labels = _labels(scan, limits)
    holdout = stratified_holdout(
        labels, len(classes), options.holdout_fraction, options.holdout_seed
    )
    encoders, schema, notes = _encoders(scan, ~holdout, limits)
    width = sum(e.spec.width for e in encoders)
    train_x, train_y, holdout_path = write_split(
        _blocks(encoders, scan.rows, width), labels, holdout, (width,), scratch
    )
    spec = FeatureSpec(
        kind="table",
        input_shape=(width,),
        input_size=width,
        classes=tuple(classes),
        columns=tuple(e.spec for e in encoders),
        label_column=scan.label_column,
        missing_tokens=scan.missing.tokens,
        missing_match="casefold",
        holdout=HoldoutRule(
            fraction=options.holdout_fraction, seed=options.holdout_seed, rows=scan.rows
        ),
    )
    counts = np.bincount(labels, minlength=len(classes))
    held = np.bincount(labels[holdout], minlength=len(classes))
    return PreparedDataset(
        kind="table",
        rows=scan.rows,
        train_rows=int((~holdout).sum()),
        holdout_rows=int(holdout.sum()),
        columns=tuple(schema),
        label_column=scan.label_column,
        classes=tuple(classes),
        class_counts=tuple(int(c) for c in counts),
        holdout_class_counts=tuple(int(c) for c in held),
        feature_spec=spec,
        train_x=train_x,
        train_y=train_y,
        holdout=holdout_path,
        preview=preview_document(scan),
        holdout_seed=options.holdout_seed,
        notes=tuple(notes),
    )
