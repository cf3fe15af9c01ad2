"""Printing results: plain JSON for scripts, rich tables for people."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = [
    "JsonFlag",
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


def echo_json(data: Any) -> None:
    """Plain JSON on stdout (no colours, no wrapping): for ``--json`` and for ``jq``."""
    typer.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def fmt_float(value: Any, digits: int = 4) -> str:
    """A number with ``digits`` decimals; ``-`` when missing."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-" if value is None else str(value)
    return f"{value:.{digits}f}"


def fmt_time(value: Any) -> str:
    """An ISO timestamp as ``YYYY-MM-DD HH:MM:SS`` (UTC as sent); ``-`` when missing."""
    if not value:
        return "-"
    try:
        return datetime.fromisoformat(str(value)).strftime("%Y-%m-%d %H:%M:%S")
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
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    empty: str = "nothing yet",
) -> None:
    """Print rows under ``columns``; ``empty`` when there are none."""
    rows = list(rows)
    if not rows:
        console.print(f"[dim]{empty}[/dim]")
        return
    grid = Table(title=title, title_justify="left", header_style="bold")
    for i, name in enumerate(columns):
        grid.add_column(name, no_wrap=i == 0, overflow="fold")
    for row in rows:
        grid.add_row(*(_text(v) for v in row))
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
