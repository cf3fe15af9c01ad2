"""``peertrain job watch | logs``: following a job as it runs.

Both keep going through a gateway blip: the SDK retries each read, and a poll that
still fails with a transient error (no answer, 502/503/504) is skipped, for up to
``--patience`` seconds in a row.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, TypeVar

import typer
from rich.live import Live
from rich.text import Text

from peertrain.client.errors import ClientError
from peertrain.client.jobs import JobProgress
from peertrain.client.retry import is_transient

from .logview import EXIT_STATES, event_text
from .shortids import JOB, resolve
from .state import CliState, state_of
from .watchview import failure_line, render_watch

__all__ = ["EXIT_CANCELLED", "EXIT_FAILED", "logs", "watch", "watch_line", "watch_lines"]

EXIT_FAILED = 1
EXIT_CANCELLED = 3
JsonLines = Annotated[
    bool, typer.Option("--json", help="One JSON object per line (NDJSON) on stdout.")
]
Interval = Annotated[float, typer.Option(min=0.0, help="Seconds between polls.")]
Patience = Annotated[
    float,
    typer.Option(min=0.0, help="Seconds of transient failures (server away) to sit out."),
]
# Events are re-read from a little before the last one seen, and kept once by id:
# several streams make up a job's history, so one may land just before another's.
_OVERLAP = 50
T = TypeVar("T")


def _ndjson(doc: Any) -> None:
    typer.echo(json.dumps(doc, default=str))


def _exit_for(state: CliState, job_id: str, final: str, reason: str) -> None:
    if final == "failed":
        state.err.print(Text(f"job {job_id} failed: {reason}", style="red"))
        raise typer.Exit(EXIT_FAILED)
    if final == "cancelled":
        state.err.print(Text(f"job {job_id} was cancelled", style="yellow"))
        raise typer.Exit(EXIT_CANCELLED)


def watch_line(progress: JobProgress, last_round: dict[str, Any] | None = None) -> dict[str, Any]:
    """One NDJSON line of ``job watch --json``: the job's state and one round (by
    default its newest), with ``rounds_done`` the rounds ended up to that one."""
    job = progress.job
    rounds = progress.rounds
    if last_round is None and rounds:
        last_round = rounds[-1]
    done = rounds.index(last_round) + 1 if last_round in rounds else len(rounds)
    return {
        "job_id": job.get("job_id"),
        "name": job.get("name"),
        "state": progress.state,
        "current_round": job.get("current_round"),
        "rounds": job.get("rounds"),
        "rounds_done": done,
        "last_round": last_round,
        "error": job.get("error"),
    }


def watch_lines(progress: JobProgress, said: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What ``job watch --json`` prints for one poll, after the lines ``said`` so far:
    a line for every round not told yet (however many ended since the last poll),
    then one more when the job changed otherwise (its state, say)."""
    told = {_round_key(line["last_round"]) for line in said if line.get("last_round")}
    new = [r for r in progress.rounds if _round_key(r) not in told]
    lines = [watch_line(progress, r) for r in new]
    latest = watch_line(progress)
    previous = lines[-1] if lines else said[-1] if said else None
    if latest != previous:
        lines.append(latest)
    return lines


def _round_key(r: dict[str, Any]) -> Any:
    return r.get("round"), r.get("attempt")


def watch(
    ctx: typer.Context,
    job_id: str,
    interval: Interval = 2.0,
    patience: Patience = 300.0,
    json_out: JsonLines = False,
) -> None:
    """Follow a job round by round until it ends (--json: a line per round, and one
    per other change).

    Exit status: 0 completed, 1 failed, 3 cancelled.
    """
    state = state_of(ctx)
    if state.poll_interval is not None:
        interval = state.poll_interval
    last: JobProgress | None = None
    with state.client() as pt:
        job_id = resolve(pt, JOB, job_id)
        polls = pt.watch_job(job_id, interval=interval, patience=patience)
        if json_out:
            said: list[dict[str, Any]] = []
            for progress in polls:
                last = progress
                for line in watch_lines(progress, said):
                    _ndjson(line)
                    said.append(line)
        else:
            with Live(console=state.out, auto_refresh=False) as live:
                for progress in polls:
                    last = progress
                    live.update(render_watch(progress), refresh=True)
    assert last is not None
    _exit_for(state, job_id, last.state, failure_line(last.job))


def _patiently(read: Callable[[], T], patience: float, pause: float) -> T:
    """``read()``, again while it fails transiently, for up to ``patience`` seconds."""
    started = time.monotonic()
    while True:
        try:
            return read()
        except ClientError as exc:
            if not is_transient(exc) or time.monotonic() - started > patience:
                raise
            time.sleep(max(pause, 0.05))


def logs(
    ctx: typer.Context,
    job_id: str,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing until the job ends.")
    ] = False,
    interval: Interval = 2.0,
    patience: Patience = 300.0,
    json_out: JsonLines = False,
) -> None:
    """What happened in a job, in words: rounds opening and closing, each peer's
    per-epoch progress, failed tasks with their tracebacks, updates, model versions.

    Exit status with --follow: 0 completed, 1 failed, 3 cancelled.
    """
    state = state_of(ctx)
    if state.poll_interval is not None:
        interval = state.poll_interval
    seen: set[str] = set()
    final: tuple[str, str] | None = None
    with state.client() as pt:
        job_id = resolve(pt, JOB, job_id)
        while True:
            offset = max(0, len(seen) - _OVERLAP)
            found = _patiently(partial(pt.job_events, job_id, offset=offset), patience, interval)
            for event in found:
                key = str(event.get("id") or (event.get("stream"), event.get("seq")))
                if key in seen:
                    continue
                seen.add(key)
                if json_out:
                    _ndjson(event)
                else:
                    state.out.print(event_text(event))
                kind = str(event.get("type"))
                if kind in EXIT_STATES:
                    data = event.get("data") if isinstance(event.get("data"), dict) else {}
                    final = (EXIT_STATES[kind], str((data or {}).get("reason") or "-"))
            if not follow or final is not None:
                break
            time.sleep(interval)
    if follow and final is not None:
        _exit_for(state, job_id, *final)
