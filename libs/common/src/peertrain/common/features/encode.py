"""Encoding columns and images as a feature spec describes (``ColumnEncoding``, ``ImageEncoding``).

Tables: every feature column gives ``width`` features at ``offset``:

* numeric: a missing value (NaN) becomes ``fill``, then ``(value - mean) / std``; a
  cell that is not a number is an error, or missing where the column was kept numeric
  despite a few such cells (``non_numbers_missing``);
* boolean: 1 for ``true``/``yes``, 0 for ``false``/``no`` (any case), missing as numeric
  (booleans keep mean 0, std 1);
* categorical: one-hot over ``categories``; a missing value sets the last column when
  ``missing_category`` is set; a category the training data never had sets none.

Which cells are missing: :mod:`.missing` (the tokens the feature spec records).

Images: ``(pixel / 255 - mean[c]) / std[c]`` per channel, after conversion to ``mode``
and a bilinear resize to ``width`` x ``height``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .missing import MissingMatch, is_missing, is_number, missing_rule

__all__ = [
    "UNSEEN",
    "column_values",
    "encode_column",
    "encode_pixels",
    "encode_table",
    "to_pixels",
]

UNSEEN = -2
"""A categorical value the training data did not have (``-1`` is missing)."""

_TRUE = ("true", "yes")
_FALSE = ("false", "no")


def _cells(cells: Sequence[Any] | NDArray[Any]) -> NDArray[np.str_]:
    """Cells as trimmed strings (``None`` becomes the empty, missing, cell)."""
    if isinstance(cells, np.ndarray) and cells.dtype.kind == "U":
        text = cells
    else:
        text = np.array(["" if c is None else str(c) for c in cells], dtype=str)
    if len(text) == 0:
        return np.zeros(0, dtype="<U1")
    stripped: NDArray[np.str_] = np.strings.strip(text)
    return stripped


def column_values(
    column: Mapping[str, Any],
    cells: Sequence[Any] | NDArray[Any],
    missing_tokens: Sequence[str],
    match: MissingMatch = "exact",
) -> NDArray[np.float32] | NDArray[np.int32]:
    """One column's raw cells as :func:`encode_column` takes them.

    Returns float32 with NaN where missing (numeric, boolean), or int32 category
    indices with ``-1`` where missing and :data:`UNSEEN` for new values (categorical).
    A cell is missing as :func:`~.missing.is_missing` says with ``missing_tokens`` and
    ``match`` (:func:`~.missing.missing_rule` reads both from a feature spec).

    Raises
    ------
    ValueError
        A numeric or boolean column holds a value that is neither (names the column).
    """
    text = _cells(cells)
    missing = is_missing(text, missing_tokens, match)
    if column["type"] == "numeric" and column.get("non_numbers_missing"):
        missing |= ~_numbers_mask(text)
    present = text[~missing]
    kind = column["type"]
    if kind == "categorical":
        index = {v: i for i, v in enumerate(column["categories"] or ())}
        codes = np.full(len(text), -1, dtype=np.int32)
        codes[~missing] = np.array([index.get(v, UNSEEN) for v in present], dtype=np.int32)
        return codes
    values = np.full(len(text), np.nan, dtype=np.float32)
    if kind == "boolean":
        lowered = np.strings.lower(present)
        is_true, is_false = np.isin(lowered, _TRUE), np.isin(lowered, _FALSE)
        if not (is_true | is_false).all():
            bad = present[~(is_true | is_false)][0]
            raise ValueError(f"column {column['name']!r} is boolean; {str(bad)!r} is not")
        values[~missing] = is_true.astype(np.float32)
        return values
    try:
        parsed = present.astype(np.float64)
    except ValueError:
        bad = next(str(v) for v in present if not is_number(str(v)))
        raise ValueError(f"column {column['name']!r} is numeric; {bad!r} is not") from None
    if not np.isfinite(parsed).all():
        raise ValueError(f"column {column['name']!r} has a value that is not finite")
    values[~missing] = parsed.astype(np.float32)
    return values


def _numbers_mask(text: NDArray[np.str_]) -> NDArray[np.bool_]:
    """Where cells are finite numbers."""
    return np.array([is_number(str(v)) for v in text], dtype=bool)


def encode_column(
    out: NDArray[np.float32],
    column: Mapping[str, Any],
    values: NDArray[np.float32] | NDArray[np.int32],
) -> None:
    """Write one column's features into ``out[:, offset:offset + width]`` (zeros there).

    ``values`` are as :func:`column_values` gives them.
    """
    offset, width = int(column["offset"]), int(column["width"])
    if column["type"] == "categorical":
        codes = np.asarray(values, dtype=np.int64)
        known = len(column["categories"] or ())
        index = np.where(codes == -1, width - 1 if column.get("missing_category") else -1, codes)
        hit = (index >= 0) & (index < width) & ((codes < known) | (codes == -1))
        rows = np.flatnonzero(hit)
        out[rows, offset + index[hit]] = 1.0
        return
    v = np.asarray(values, dtype=np.float32)
    v = np.where(np.isnan(v), np.float32(column["fill"] or 0.0), v)
    mean = np.float32(column["mean"] if column.get("mean") is not None else 0.0)
    std = np.float32(column["std"] if column.get("std") is not None else 1.0)
    out[:, offset] = (v - mean) / std


def encode_table(
    feature_spec: Mapping[str, Any], table: Mapping[str, Sequence[Any] | NDArray[Any]]
) -> NDArray[np.float32]:
    """Rows of raw cells, one sequence per column name, as features ``(rows, width)``.

    Columns the spec does not use (the label, empty ones, others) are ignored.

    Raises
    ------
    KeyError
        A feature column of the spec is not in ``table``.
    ValueError
        A cell that its column's type cannot read, or columns of unequal length.
    """
    columns = feature_spec["columns"]
    lengths = {len(table[c["name"]]) for c in columns}
    if len(lengths) > 1:
        raise ValueError("the columns have different numbers of rows")
    rows = lengths.pop() if lengths else 0
    out = np.zeros((rows, int(feature_spec["input_size"])), dtype=np.float32)
    tokens, match = missing_rule(feature_spec)
    for column in columns:
        values = column_values(column, table[column["name"]], tokens, match)
        encode_column(out, column, values)
    return out


def encode_pixels(pixels: NDArray[np.uint8], image: Mapping[str, Any]) -> NDArray[np.float32]:
    """``uint8`` images ``(n, channels, height, width)`` standardised per channel."""
    mean = np.array(image["mean"], dtype=np.float32)[None, :, None, None]
    std = np.array(image["std"], dtype=np.float32)[None, :, None, None]
    scaled = np.asarray(pixels).astype(np.float32) / np.float32(255.0)
    out: NDArray[np.float32] = (scaled - mean) / std
    return out


def to_pixels(picture: Any, image: Mapping[str, Any]) -> NDArray[np.uint8]:
    """A PIL image converted to ``mode`` and brought to ``width`` x ``height`` as ``fit``
    says (``ImageEncoding``): ``uint8 (channels, height, width)``.

    Needs Pillow (imported here, on first use only).
    """
    from PIL import Image

    converted = picture.convert(image["mode"])
    size = (int(image["width"]), int(image["height"]))
    if converted.size != size and image.get("fit", "stretch") == "crop":
        (w0, h0), (w, h) = converted.size, size
        scale = max(w / w0, h / h0)
        covering = (max(w, round(w0 * scale)), max(h, round(h0 * scale)))
        left, top = (covering[0] - w) // 2, (covering[1] - h) // 2
        converted = converted.resize(covering, Image.Resampling.BILINEAR)
        converted = converted.crop((left, top, left + w, top + h))
    elif converted.size != size:
        converted = converted.resize(size, Image.Resampling.BILINEAR)
    pixels = np.asarray(converted, dtype=np.uint8)
    out: NDArray[np.uint8] = pixels[None, :, :] if pixels.ndim == 2 else pixels.transpose(2, 0, 1)
    return np.ascontiguousarray(out)
