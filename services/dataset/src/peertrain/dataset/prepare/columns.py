"""Type inference for one CSV column, batch by batch, with bounded memory.

A column counts its cells as they arrive: missing (one of the upload's missing tokens,
after trimming, ignoring the case of A-Z), numbers (finite, as
:data:`~peertrain.common.features.NUMBER_PATTERN` says), boolean tokens
(``true``/``false``/``yes``/``no``, any case), and its distinct present values up to
``cap``. :func:`~.column_types.decide_type` decides its type from those counts at the
end.

While a column can still be numeric, its numbers go to a float32 scratch file (NaN
where missing or not a number); so that a text column of a long file does not keep one,
a column stops being a candidate once :data:`JUDGED_AFTER` present cells have been
seen and more than ``1 - NUMERIC_SHARE`` of those seen are not numbers. While it can
still be boolean, its 0/1 values go to another; while it can still be categorical, its
first-seen category codes go to an int32 scratch file (-1 where missing). Encoding
reads those files back, so the CSV is parsed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from peertrain.common.features import NUMBER_PATTERN, NUMERIC_SHARE, fold_tokens

from .column_types import EXAMPLES, ColumnCounts

__all__ = ["JUDGED_AFTER", "ColumnProfile", "MissingCells", "sort_categories"]

JUDGED_AFTER = 50_000
"""Present cells after which a column that is clearly not numeric stops being profiled
as numeric (its scratch file is dropped); before, the whole column decides."""

_TRUE = pa.array(["true", "yes"], pa.string())
_FALSE = pa.array(["false", "no"], pa.string())


class MissingCells:
    """Which trimmed cells are missing: one of ``tokens``, ignoring the case of A-Z
    (:func:`~peertrain.common.features.fold_tokens`)."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self.tokens = tuple(tokens)
        self._keys = pa.array(fold_tokens(tokens, "casefold"), pa.string())

    def mask(self, values: pa.Array) -> NDArray[np.bool_]:
        """Where trimmed ``values`` are missing."""
        hits = pc.is_in(pc.ascii_lower(values), value_set=self._keys)
        return np.asarray(hits.to_numpy(zero_copy_only=False))


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
        Path prefix of its scratch files (``<stem>.f32``, ``<stem>.b32``, ``<stem>.i32``).
    cap
        Most distinct values kept as categories (beyond: not categorical).
    scalars
        Whether to keep numeric/boolean candidacy at all (not for the label column).
    """

    def __init__(self, name: str, stem: Path, cap: int, *, scalars: bool = True) -> None:
        self.name = name
        self.cap = cap
        self.counts = ColumnCounts(numeric=scalars, boolean=scalars)
        self.codes: dict[str, int] = {}
        self.scalar_path = stem.with_suffix(".f32")
        self.boolean_path = stem.with_suffix(".b32")
        self.codes_path = stem.with_suffix(".i32")
        self._scalar_out: BinaryIO | None = self.scalar_path.open("wb") if scalars else None
        self._boolean_out: BinaryIO | None = self.boolean_path.open("wb") if scalars else None
        self._codes_out: BinaryIO | None = self.codes_path.open("wb")

    @property
    def missing(self) -> int:
        """Rows without a value."""
        return self.counts.missing

    @property
    def overflow(self) -> bool:
        """Whether it has more distinct values than ``cap``."""
        return self.counts.overflow

    def add(self, values: pa.Array, missing: NDArray[np.bool_]) -> NDArray[np.int32] | None:
        """Take one batch of trimmed values; return its codes while still categorical."""
        self.counts.rows += len(values)
        self.counts.missing += int(missing.sum())
        present = values.filter(pa.array(~missing)) if missing.any() else values
        if self._scalar_out is not None:
            self._add_numbers(present, missing)
            self._judge_numbers()
        if self._boolean_out is not None:
            self._add_booleans(present, missing)
        return self._add_codes(values, present, missing)

    def _add_numbers(self, present: pa.Array, missing: NDArray[np.bool_]) -> None:
        assert self._scalar_out is not None
        out = np.full(len(missing), np.nan, dtype=np.float32)
        try:
            parsed = pc.cast(present, pa.float64()).to_numpy(zero_copy_only=False)
            numbers = np.isfinite(parsed)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            looks = pc.match_substring_regex(present, NUMBER_PATTERN)
            numbers = np.asarray(looks.to_numpy(zero_copy_only=False), dtype=bool)
            parsed = np.full(len(present), np.nan)
            parsed[numbers] = pc.cast(present.filter(looks), pa.float64()).to_numpy(
                zero_copy_only=False
            )
            numbers &= np.isfinite(parsed)
        where = np.flatnonzero(~missing)[numbers]
        out[where] = parsed[numbers].astype(np.float32)
        self.counts.numbers += int(numbers.sum())
        others = len(present) - int(numbers.sum())
        if others:
            self.counts.non_numbers += others
            if len(self.counts.examples) < EXAMPLES:
                examples = self.counts.examples
                strays = pc.unique(present.filter(pa.array(~numbers))).to_pylist()
                for value in strays:
                    if len(examples) < EXAMPLES and str(value) not in examples:
                        examples.append(str(value))
        self._scalar_out.write(out.tobytes())

    def _judge_numbers(self) -> None:
        counts = self.counts
        seen = counts.numbers + counts.non_numbers
        if seen >= JUDGED_AFTER and counts.non_numbers > (1 - NUMERIC_SHARE) * seen:
            assert self._scalar_out is not None
            self._scalar_out.close()
            self._scalar_out = None
            self.scalar_path.unlink(missing_ok=True)
            counts.numeric = False

    def _add_booleans(self, present: pa.Array, missing: NDArray[np.bool_]) -> None:
        assert self._boolean_out is not None
        lowered = pc.utf8_lower(present)
        is_true = pc.is_in(lowered, value_set=_TRUE).to_numpy(zero_copy_only=False)
        is_false = pc.is_in(lowered, value_set=_FALSE).to_numpy(zero_copy_only=False)
        if not (is_true | is_false).all():
            self._boolean_out.close()
            self._boolean_out = None
            self.boolean_path.unlink(missing_ok=True)
            self.counts.boolean = False
            return
        out = np.full(len(missing), np.nan, dtype=np.float32)
        out[~missing] = np.asarray(is_true, dtype=np.float32)
        self._boolean_out.write(out.tobytes())

    def _add_codes(
        self, values: pa.Array, present: pa.Array, missing: NDArray[np.bool_]
    ) -> NDArray[np.int32] | None:
        if self._codes_out is None:
            return None
        if pc.count_distinct(present).as_py() > self.cap:
            self._drop_codes()  # this batch alone has too many values
            return None
        encoded = pc.dictionary_encode(values)
        local = encoded.dictionary.to_pylist()
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        is_missing = np.zeros(len(local), dtype=bool)
        is_missing[indices[missing]] = True
        lookup = np.empty(len(local), dtype=np.int32)
        for i, value in enumerate(local):
            if is_missing[i]:
                lookup[i] = -1
                continue
            code = self.codes.get(value)
            if code is None:
                if len(self.codes) >= self.cap:
                    self._drop_codes()
                    return None
                code = self.codes[value] = len(self.codes)
            lookup[i] = code
        codes: NDArray[np.int32] = lookup[indices]
        self._codes_out.write(codes.tobytes())
        return codes

    def _drop_codes(self) -> None:
        if self._codes_out is not None:
            self._codes_out.close()
            self._codes_out = None
            self.codes_path.unlink(missing_ok=True)
        self.counts.overflow = True
        self.codes = {}

    def finish(self) -> None:
        """Close the scratch files (they stay for encoding)."""
        self.counts.distinct = None if self.counts.overflow else len(self.codes)
        for out in (self._scalar_out, self._boolean_out, self._codes_out):
            if out is not None:
                out.close()

    def categories(self) -> tuple[list[str], NDArray[np.int32]]:
        """Sorted categories and the map from first-seen code to sorted index."""
        ordered = sort_categories(list(self.codes))
        rank = {v: i for i, v in enumerate(ordered)}
        remap = np.empty(len(self.codes), dtype=np.int32)
        for value, code in self.codes.items():
            remap[code] = rank[value]
        return ordered, remap
