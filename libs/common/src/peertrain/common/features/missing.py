"""Which cells mean "missing", and when a mostly numeric column stays numeric.

The one rule of PeerTrain for missing cells: a cell is missing when, after trimming
whitespace, it equals one of the dataset's missing tokens, compared without regard to
the case of the letters A-Z (``casefold``: ``n/a`` is ``N/A``; other letters compare
exactly, so that Arrow and NumPy fold alike) for datasets validated since the rule was
widened, or exactly (``exact``) for older ones (their feature spec has no
``missing_match``). The dataset service applies it when it validates an upload, and a
downloaded model's preprocessing applies it, with the tokens recorded in the feature
spec, to new rows.

A column whose present cells are mostly numbers (at least :data:`NUMERIC_SHARE`) is
numeric; its few other cells are read as missing and reported.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DEFAULT_MISSING_TOKENS",
    "LEGACY_MISSING_TOKENS",
    "NUMBER_PATTERN",
    "NUMERIC_SHARE",
    "MissingMatch",
    "fold_tokens",
    "is_missing",
    "is_number",
    "missing_rule",
    "parse_missing_values",
]

MissingMatch = Literal["exact", "casefold"]

DEFAULT_MISSING_TOKENS: tuple[str, ...] = ("", "NA", "N/A", "NaN", "null", "None", "?", "-")
"""The tokens read as missing unless an upload names its own (compared ignoring case)."""

LEGACY_MISSING_TOKENS: tuple[str, ...] = ("", "?", "NA")
"""The tokens of datasets validated before :data:`DEFAULT_MISSING_TOKENS` (exact match)."""

NUMERIC_SHARE = 0.9
"""Least share of a column's present cells that are numbers for it to be numeric."""

NUMBER_PATTERN = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
"""What a number looks like in a cell (trimmed); it must also be finite as a float64."""

_NUMBER = re.compile(NUMBER_PATTERN)


def is_number(cell: str) -> bool:
    """Whether the trimmed ``cell`` is a finite number (:data:`NUMBER_PATTERN`)."""
    return _NUMBER.match(cell) is not None and math.isfinite(float(cell))


_ASCII_LOWER = "".join(
    chr(i).lower() if chr(i) in string.ascii_uppercase else chr(i) for i in range(256)
)
"""A ``str.translate`` table that lower-cases A-Z and leaves every other character."""


def fold_tokens(tokens: Iterable[str], match: MissingMatch) -> tuple[str, ...]:
    """The tokens as cells are compared with them: trimmed, and for ``casefold`` with
    A-Z lower-cased (as ``pyarrow.compute.ascii_lower`` does)."""
    trimmed = (t.strip() for t in tokens)
    folded = (t.translate(_ASCII_LOWER) for t in trimmed) if match == "casefold" else trimmed
    return tuple(dict.fromkeys(folded))


def is_missing(
    cells: NDArray[np.str_], tokens: Sequence[str], match: MissingMatch
) -> NDArray[np.bool_]:
    """Where the trimmed ``cells`` are missing."""
    folding = match == "casefold" and len(cells) > 0
    keys = np.strings.translate(cells, _ASCII_LOWER) if folding else cells
    folded = np.array(list(fold_tokens(tokens, match)), dtype=str)
    mask: NDArray[np.bool_] = np.isin(keys, folded)
    return mask


def parse_missing_values(text: str) -> tuple[str, ...]:
    """A comma-separated list of tokens (as ``--missing-values`` and the upload form
    take it), trimmed, in order, without repeats; the empty cell is always one of them.

    ``"NA, unknown"`` gives ``("", "NA", "unknown")``; ``""`` gives ``("",)``.
    """
    tokens = [t.strip() for t in text.split(",")]
    return tuple(dict.fromkeys(["", *(t for t in tokens if t)]))


def missing_rule(feature_spec: Mapping[str, Any]) -> tuple[tuple[str, ...], MissingMatch]:
    """The missing tokens and how cells are compared with them, from a feature spec's
    JSON form (older specs: :data:`LEGACY_MISSING_TOKENS`, ``exact``)."""
    tokens = tuple(feature_spec.get("missing_tokens") or LEGACY_MISSING_TOKENS)
    match: MissingMatch = "casefold" if feature_spec.get("missing_match") == "casefold" else "exact"
    return tokens, match
