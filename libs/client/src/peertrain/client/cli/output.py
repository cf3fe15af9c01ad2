"""Printing results: plain JSON for scripts, rich tables for people."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

__all__ = [
    "Col",
    "JsonFlag",
    "WideFlag",
    "YesFlag",
    "cell",
    "echo_json",
    "fmt_float",
    "fmt_time",
    "key_values",
    "table",
]

JsonFlag = Annotated[bool, typer.Option("--json", help="Plain JSON on stdout.")]
"""Every command's ``--json``: its answer as plain JSON on stdout."""
YesFlag = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")]
"""A destructive command's ``--yes``: no confirmation prompt."""
WideFlag = Annotated[
    bool, typer.Option("--wide", "-w", help="Full ids and every column, however wide.")
]
"""A listing's ``--wide``: full ids and every column (the table may outgrow the screen)."""


@dataclass(frozen=True)
class Col:
    """A table column: ``flex`` ones (names, messages) give way when the table is too
    wide for the screen, their cells ending in an ellipsis, the others keep their
    width; ``wide`` ones show only with ``--wide``."""

    name: str
    flex: bool = False
    wide: bool = False


def echo_json(data: Any) -> None:
    """Plain JSON on stdout (no colours, no wrapping): for ``--json`` and for ``jq``."""
    typer.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def fmt_float(value: Any, digits: int = 4) -> str:
    """A number with ``digits`` decimals; ``-`` when missing."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-" if value is None else str(value)
    return f"{value:.{digits}f}"


def fmt_time(value: Any, *, short: bool = False) -> str:
    """An ISO timestamp as ``YYYY-MM-DD HH:MM:SS`` (``short``: ``MM-DD HH:MM``; UTC as
    sent); ``-`` when missing."""
    if not value:
        return "-"
    try:
        shape = "%m-%d %H:%M" if short else "%Y-%m-%d %H:%M:%S"
        return datetime.fromisoformat(str(value)).strftime(shape)
    except ValueError:
        return str(value)


def cell(value: Any) -> str:
    """Any value as a short table cell."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return fmt_float(value)
    if isinstance(value, dict | list):
        text = json.dumps(value, default=str)
        return text if len(text) <= 80 else text[:77] + "..."
    return str(value)


def _text(value: Any) -> Text:
    # Data is never markup: a name like "[red]x" prints as it is.
    if isinstance(value, Text):
        return value
    return Text(value if isinstance(value, str) else cell(value))


def table(
    console: Console,
    columns: Sequence[str | Col],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    empty: str = "nothing yet",
    wide: bool = False,
) -> None:
    """Print rows under ``columns``; ``empty`` when there are none.

    No cell wraps: a long one ends in an ellipsis, so a table fits the screen (80
    columns) and a word is never split over two lines; a column that is not ``flex``
    (ids, states, numbers; a plain string) is never cut. With
    ``wide``, every column shows and nothing is cut, however wide.
    """
    rows = list(rows)
    if not rows:
        console.print(f"[dim]{empty}[/dim]")
        return
    cols = [c if isinstance(c, Col) else Col(c) for c in columns]
    keep = [i for i, c in enumerate(cols) if wide or not c.wide]
    cells = [[_text(row[i]) for i in keep] for row in rows]
    grid = Table(
        title=title,
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    natural = [
        max([len(cols[i].name), *(c[position].cell_len for c in cells)])
        for position, i in enumerate(keep)
    ]
    flexible = [p for p, i in enumerate(keep) if cols[i].flex and not wide]
    # Three spaces between columns (padding and the box's divider); flexible columns
    # share what is left.
    fixed = sum(w for p, w in enumerate(natural) if p not in flexible) + 3 * (len(keep) - 1)
    share = max(0, console.width - fixed) // max(1, len(flexible))
    for position, i in enumerate(keep):
        flex = position in flexible
        grid.add_column(
            cols[i].name,
            no_wrap=True,
            overflow="ellipsis",
            min_width=None if flex else natural[position],
            max_width=max(len(cols[i].name), share) if flex else None,
        )
    for row_cells in cells:
        grid.add_row(*row_cells)
    if wide:  # as wide as it takes: a script or a pager gets every character
        needed = Measurement.get(console, console.options.update(max_width=100_000), grid)
        console.width = max(console.width, needed.maximum)
    console.print(grid)


def key_values(console: Console, doc: dict[str, Any], *, skip: Iterable[str] = ()) -> None:
    """One document as a two-column table, in the API's field order."""
    skipped = set(skip)
    grid = Table(show_header=False, box=None, pad_edge=False)
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for key, value in doc.items():
        if key not in skipped:
            grid.add_row(key, Text(fmt_time(value) if key.endswith("_at") else cell(value)))
    console.print(grid)
