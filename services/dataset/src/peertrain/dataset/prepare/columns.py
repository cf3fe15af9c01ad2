"""Type inference for one CSV column, batch by batch, with bounded memory.

A column starts as a candidate for every type and loses candidacies as values arrive:

* ``numeric`` while every present value parses as a finite number;
* ``boolean`` while every present value is ``true``/``false``/``yes``/``no`` (any case);
* ``categorical`` while it has at most ``cap`` distinct present values.

Missing values (:data:`~peertrain.common.events.datasets.MISSING_TOKENS`, after trimming)
count for none. While a column can still be numeric or boolean, its values go to a
float32 scratch file (NaN where missing); while it can still be categorical, its
first-seen category codes go to an int32 scratch file (-1 where missing). Encoding
reads those files back, so the CSV is parsed once.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from peertrain.common.events.datasets import MISSING_TOKENS

__all__ = ["ColumnProfile", "missing_mask", "sort_categories"]

_MISSING = pa.array(MISSING_TOKENS, pa.string())
_TRUE = pa.array(["true", "yes"], pa.string())
_FALSE = pa.array(["false", "no"], pa.string())


def missing_mask(values: pa.Array) -> NDArray[np.bool_]:
    """Where trimmed ``values`` are missing."""
    return np.asarray(pc.is_in(values, value_set=_MISSING).to_numpy(zero_copy_only=False))


def sort_categories(values: list[str]) -> list[str]:
    """Numbers in numeric order when every value is a number, else in string order."""
    try:
        keyed = sorted((float(v), v) for v in values)
    except ValueError:
        return sorted(values)
    return [v for _, v in keyed]


class ColumnProfile:
    """What the first pass learns about one column.

    Parameters
    ----------
    name
        The column's name.
    stem
        Path prefix of its scratch files (``<stem>.f32``, ``<stem>.i32``).
    cap
        Most distinct values kept as categories (beyond: not categorical).
    scalars
        Whether to keep numeric/boolean candidacy at all (not for the label column).
    """

    def __init__(self, name: str, stem: Path, cap: int, *, scalars: bool = True) -> None:
        self.name = name
        self.cap = cap
        self.rows = 0
        self.missing = 0
        self.numeric = scalars
        self.boolean = scalars
        self.codes: dict[str, int] = {}
        self.overflow = False
        self.scalar_path = stem.with_suffix(".f32")
        self.codes_path = stem.with_suffix(".i32")
        self._scalar_out: BinaryIO | None = self.scalar_path.open("wb") if scalars else None
        self._codes_out: BinaryIO | None = self.codes_path.open("wb")

    @property
    def present(self) -> int:
        """Rows with a value."""
        return self.rows - self.missing

    def add(self, values: pa.Array, missing: NDArray[np.bool_]) -> NDArray[np.int32] | None:
        """Take one batch of trimmed values; return its codes while still categorical."""
        self.rows += len(values)
        self.missing += int(missing.sum())
        self._add_scalars(values, missing)
        return self._add_codes(values, missing)

    def _add_scalars(self, values: pa.Array, missing: NDArray[np.bool_]) -> None:
        if self._scalar_out is None:
            return
        out = np.full(len(values), np.nan, dtype=np.float32)
        present = values.filter(pa.array(~missing)) if missing.any() else values
        if len(present):
            parsed = self._numbers(present)
            if parsed is None:
                parsed = self._booleans(present)
            if parsed is None:
                self._drop_scalars()
                return
            out[~missing] = parsed
        self._scalar_out.write(out.tobytes())

    def _numbers(self, present: pa.Array) -> NDArray[np.float32] | None:
        if not self.numeric:
            return None
        try:
            parsed = pc.cast(present, pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            self.numeric = False
            return None
        if not np.isfinite(parsed).all():
            self.numeric = False
            return None
        self.boolean = False  # a number is not a boolean token
        numbers: NDArray[np.float32] = parsed.astype(np.float32)
        return numbers

    def _booleans(self, present: pa.Array) -> NDArray[np.float32] | None:
        if not self.boolean:
            return None
        lowered = pc.utf8_lower(present)
        is_true = pc.is_in(lowered, value_set=_TRUE).to_numpy(zero_copy_only=False)
        is_false = pc.is_in(lowered, value_set=_FALSE).to_numpy(zero_copy_only=False)
        if not (is_true | is_false).all():
            self.boolean = False
            return None
        return np.asarray(is_true, dtype=np.float32)

    def _drop_scalars(self) -> None:
        if self._scalar_out is not None:
            self._scalar_out.close()
            self._scalar_out = None
            self.scalar_path.unlink(missing_ok=True)
        self.numeric = self.boolean = False

    def _add_codes(self, values: pa.Array, missing: NDArray[np.bool_]) -> NDArray[np.int32] | None:
        if self._codes_out is None:
            return None
        if pc.count_distinct(values).as_py() > self.cap + len(MISSING_TOKENS):
            self._drop_codes()  # this batch alone has too many values
            return None
        encoded = pc.dictionary_encode(values)
        local = encoded.dictionary.to_pylist()
        lookup = np.empty(len(local), dtype=np.int32)
        missing_set = set(MISSING_TOKENS)
        for i, value in enumerate(local):
            if value in missing_set:
                lookup[i] = -1
                continue
            code = self.codes.get(value)
            if code is None:
                if len(self.codes) >= self.cap:
                    self._drop_codes()
                    return None
                code = self.codes[value] = len(self.codes)
            lookup[i] = code
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        codes: NDArray[np.int32] = lookup[indices]
        self._codes_out.write(codes.tobytes())
        return codes

    def _drop_codes(self) -> None:
        if self._codes_out is not None:
            self._codes_out.close()
            self._codes_out = None
            self.codes_path.unlink(missing_ok=True)
        self.overflow = True
        self.codes = {}

    def finish(self) -> None:
        """Close the scratch files (they stay for encoding)."""
        for out in (self._scalar_out, self._codes_out):
            if out is not None:
                out.close()

    @property
    def kind(self) -> Literal["numeric", "boolean", "categorical", "empty", "overflow"]:
        """``numeric``, ``boolean``, ``categorical``, ``empty``, or ``overflow``."""
        if self.present == 0:
            return "empty"
        if self.numeric:
            return "numeric"
        if self.boolean:
            return "boolean"
        if not self.overflow:
            return "categorical"
        return "overflow"

    def categories(self) -> tuple[list[str], NDArray[np.int32]]:
        """Sorted categories and the map from first-seen code to sorted index."""
        ordered = sort_categories(list(self.codes))
        rank = {v: i for i, v in enumerate(ordered)}
        remap = np.empty(len(self.codes), dtype=np.int32)
        for value, code in self.codes.items():
            remap[code] = rank[value]
        return ordered, remap
