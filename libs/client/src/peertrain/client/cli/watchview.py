"""What ``peertrain job watch`` draws for one poll: a table per round, a sparkline, ETA.

Pure: a :class:`~peertrain.client.jobs.JobProgress` in, a rich renderable out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from peertrain.client.jobs import JobProgress

from .output import fmt_float

__all__ = ["eta_seconds", "failure_line", "fmt_duration", "render_watch", "sparkline"]

_BLOCKS = "▁▂▃▄▅▆▇█"
STATE_STYLE = {
    "completed": "bold green",
    "failed": "bold red",
    "cancelled": "bold yellow",
    "running": "cyan",
}
MAX_ROWS = 20


def sparkline(values: Sequence[float | None], width: int = 40) -> str:
    """Values as a line of block characters (the last ``width``); gaps as spaces."""
    shown = list(values)[-width:]
    numbers = [v for v in shown if v is not None]
    if not numbers:
        return ""
    low, high = min(numbers), max(numbers)
    span = high - low
    out = []
    for v in shown:
        if v is None:
            out.append(" ")
        else:
            level = 0 if span == 0 else round((v - low) / span * (len(_BLOCKS) - 1))
            out.append(_BLOCKS[level if span else len(_BLOCKS) // 2])
    return "".join(out)


def fmt_duration(seconds: float | None) -> str:
    """``1h02m``, ``3m05s``, ``42s``, ``0.4s`` (under 10 s: rounds of a fast job, an
    asynchronous job's versions); ``-`` when unknown."""
    if seconds is None or seconds < 0:
        return "-"
    if seconds < 9.95:
        return f"{seconds:.1f}s"
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def eta_seconds(durations: Sequence[float], done: int, total: int | None) -> float | None:
    """Remaining rounds times the mean round time so far."""
    if not total or not durations or done >= total:
        return 0.0 if total and done >= total else None
    return (total - done) * (sum(durations) / len(durations))


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _peer_count(value: Any) -> str:
    if isinstance(value, list):
        return str(len(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return "-"


def render_watch(progress: JobProgress) -> RenderableType:
    """The whole watch view for one poll."""
    job = progress.job
    total = job.get("rounds") if isinstance(job.get("rounds"), int) else None
    rounds = progress.rounds
    grid = Table(header_style="bold", title_justify="left")
    for name in ("ROUND", "LOSS", "ACCURACY", "PEERS", "ROUND TIME", "ETA"):
        grid.add_column(name, justify="right")
    durations: list[float] = []
    lines: list[tuple[str, ...]] = []
    for position, r in enumerate(rounds, start=1):
        duration = _num(r.get("duration_s"))
        if duration is not None:
            durations.append(duration)
        number = r.get("round")
        eta = eta_seconds(durations, position, total)
        label = f"{number}/{total}" if total is not None else str(number)
        lines.append(
            (
                label,
                fmt_float(r.get("loss")),
                fmt_float(r.get("accuracy")),
                _peer_count(r.get("peers")),
                fmt_duration(duration),
                fmt_duration(eta),
            )
        )
    for line in lines[-MAX_ROWS:]:  # the newest rows: the live view must fit the screen
        grid.add_row(*line)
    state = progress.state
    done_rounds = len(rounds)
    header = Text.assemble(
        ("job ", "bold"),
        (str(job.get("job_id", "?")), "bold"),
        f"  {job.get('name') or ''}  ",
        (state, STATE_STYLE.get(state, "")),
        f"  round {job.get('current_round', done_rounds)}/{total if total is not None else '?'}",
    )
    if not progress.done:
        header.append(f"  ETA {fmt_duration(eta_seconds(durations, done_rounds, total))}")
    parts: list[RenderableType] = [header]
    parts.append(grid if rounds else Text("waiting for the first round...", style="dim"))
    accuracies = [_num(r.get("accuracy")) for r in rounds]
    spark = sparkline(accuracies)
    if spark:
        numbers = [a for a in accuracies if a is not None]
        parts.append(
            Text.assemble(
                "accuracy ", (spark, "cyan"), f"  {min(numbers):.3f} .. {max(numbers):.3f}"
            )
        )
    error = job.get("error")
    if error:
        parts.append(Text(f"error: {error}", style="red"))
    return Group(*parts)


def failure_line(job: dict[str, Any]) -> str:
    """Why a job failed, in one line: its error, else its first failed task's."""
    if job.get("error"):
        return str(job["error"]).splitlines()[0]
    for task in job.get("tasks") or []:
        if isinstance(task, dict) and task.get("error"):
            where = f"round {task.get('round')} on peer {task.get('peer_id')}"
            return f"{str(task['error']).splitlines()[0]} ({where})"
    return "no reason given"
