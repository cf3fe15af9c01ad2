"""Deciding a table column's type from what the parsing pass counted (pure).

In order:

* ``empty``: no present cell;
* ``numeric``: every present cell is a number;
* ``boolean``: every present cell is ``true``/``false``/``yes``/``no`` (any case);
* ``numeric`` still: at least :data:`~peertrain.common.features.NUMERIC_SHARE` (90%)
  of the present cells are numbers; the others are read as missing, and a note says
  how many and which values (a long column that is clearly text is judged early:
  :data:`~.columns.JUDGED_AFTER`);
* ``categorical``: at most the cap of distinct present values;
* else ``overflow`` (the upload is rejected: too many distinct values).

Each decision carries a reason in words, for the schema the user sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from peertrain.common.features import NUMERIC_SHARE

__all__ = ["EXAMPLES", "ColumnCounts", "ColumnType", "decide_type"]

EXAMPLES = 5
"""Most example values a note quotes."""

Kind = Literal["numeric", "boolean", "categorical", "empty", "overflow"]


@dataclass
class ColumnCounts:
    """What one column's cells were, counted by :class:`~.columns.ColumnProfile`.

    ``numeric`` / ``boolean`` say whether it is still profiled for those types (never
    for the label); ``boolean`` turns false at the first cell that is not a boolean
    token, ``numeric`` when a long column is clearly not numeric.
    """

    numeric: bool = True
    boolean: bool = True
    rows: int = 0
    missing: int = 0
    numbers: int = 0
    non_numbers: int = 0
    examples: list[str] = field(default_factory=list)
    overflow: bool = False
    distinct: int | None = None

    @property
    def present(self) -> int:
        """Cells with a value."""
        return self.rows - self.missing


@dataclass(frozen=True)
class ColumnType:
    """The decision: the type, why (for the schema), and a note for the uploader (when a
    mostly numeric column had other cells read as missing)."""

    kind: Kind
    reason: str
    note: str | None = None
    non_numbers: int = 0
    examples: tuple[str, ...] = ()


def _quoted(examples: list[str]) -> str:
    return ", ".join(repr(e) for e in examples)


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%"


def decide_type(name: str, counts: ColumnCounts, cap: int) -> ColumnType:
    """The type of column ``name`` (``cap``: most distinct values of a categorical one)."""
    present = counts.present
    if present == 0:
        return ColumnType("empty", f"empty: all {counts.rows} cells are missing")
    if counts.numeric and counts.numbers == present:
        return ColumnType("numeric", "numeric: every present cell is a number")
    if counts.boolean:
        return ColumnType("boolean", "boolean: every present cell is true/false or yes/no")
    if counts.numeric and counts.numbers >= NUMERIC_SHARE * present:
        others = counts.non_numbers
        like = _quoted(counts.examples)
        reason = (
            f"numeric: {_share(counts.numbers, present)} of present cells are numbers; "
            f"{others} cell{'s' if others != 1 else ''} like {like} treated as missing"
        )
        note = (
            f"column {name!r} is kept numeric: {counts.numbers} of its {present} present "
            f"cells are numbers ({_share(counts.numbers, present)}, at least "
            f"{NUMERIC_SHARE:.0%}); {others} other cell{'s' if others != 1 else ''} "
            f"({like}) {'are' if others != 1 else 'is'} read as missing"
        )
        return ColumnType("numeric", reason, note, others, tuple(counts.examples))
    numbers = (
        f"; {_share(counts.numbers, present)} of present cells are numbers "
        f"(numeric needs {NUMERIC_SHARE:.0%})"
        if counts.numeric and counts.numbers
        else ""
    )
    if not counts.overflow:
        distinct = counts.distinct or 0
        return ColumnType("categorical", f"category: {distinct} distinct values{numbers}")
    return ColumnType("overflow", f"more than {cap} distinct values{numbers}")
