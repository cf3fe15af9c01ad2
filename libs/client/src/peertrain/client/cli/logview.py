"""What ``peertrain job logs`` prints for each of a job's events: one line each (a
failed task adds its traceback, indented).

Pure: an event as ``GET /api/jobs/{id}/events`` answers it in, rich text out. Rounds
opening and closing, tasks sent, taken, failed and lost, each peer's per-epoch
progress, updates accepted and rejected, model versions and their holdout metrics.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from rich.text import Text

from .output import fmt_float

__all__ = ["EXIT_STATES", "event_text"]

EXIT_STATES = {"job.completed": "completed", "job.failed": "failed", "job.cancelled": "cancelled"}
_Render = Callable[[dict[str, Any]], str]


def _r(d: dict[str, Any]) -> str:
    return f"round {d.get('round', '?')}"


def _epochs(d: dict[str, Any]) -> str:
    """``epoch 3``, or ``epochs 1,2,3`` for a report of several (the figures: the last's)."""
    earlier = [e.get("epoch") for e in d.get("earlier") or () if isinstance(e, dict)]
    if not earlier:
        return f"epoch {d.get('epoch')}"
    return "epochs " + ",".join(str(e) for e in [*earlier, d.get("epoch")])


def _g(value: Any) -> str:
    """A small or large number, briefly (``1.4e-07``, ``0.001``); ``-`` when missing."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:.3g}"


def _metrics(d: dict[str, Any], loss: str = "loss", accuracy: str = "accuracy") -> str:
    return f"loss {fmt_float(d.get(loss))} accuracy {fmt_float(d.get(accuracy))}"


def _left_out(d: dict[str, Any]) -> str:
    """``; left out: shard 3 of peer p (norm outlier), ...``: the accepted updates a
    closed round did not aggregate, and why; empty when none."""
    why = [
        *((u, "norm outlier") for u in d.get("dropped") or () if isinstance(u, dict)),
        *((u, "check unconfirmed") for u in d.get("unconfirmed") or () if isinstance(u, dict)),
    ]
    if not why:
        return ""
    return "; left out: " + ", ".join(
        f"shard {u.get('shard')} of peer {u.get('peer_id')} ({reason})" for u, reason in why
    )


_LINES: dict[str, _Render] = {
    "job.created": lambda d: (
        f"job {d.get('name')!r} created: dataset {d.get('dataset_id')}, "
        f"{len(d.get('peers') or [])} peer(s): {', '.join(d.get('peers') or [])}"
    ),
    "dataset.sharded": lambda d: f"data sharded: {len(d.get('shards') or [])} shard(s)",
    "dataset.sharding_failed": lambda d: f"sharding FAILED: {d.get('message')} ({d.get('code')})",
    "job.configured": lambda d: f"configured: {d.get('rounds')} round(s), config.json written",
    "round.opened": lambda d: (
        f"{_r(d)} opened (attempt {d.get('attempt')}) from model v{d.get('model_version')}"
    ),
    "task.assigned": lambda d: (
        f"{_r(d)}: shard {d.get('shard')} sent to peer {d.get('peer_id')}"
        + (f" (reassigned from {d['reassigned_from']})" if d.get("reassigned_from") else "")
        + (f" to check task {d['checks']}" if d.get("checks") else "")
    ),
    "task.accepted": lambda d: (
        f"{_r(d)}: peer {d.get('peer_id')} took shard {d.get('shard')}"
        + (f" on {d['device']}" if d.get("device") else "")
    ),
    "task.progress": lambda d: (
        f"{_r(d)}: peer {d.get('peer_id')} {_epochs(d)}/{d.get('epochs')} "
        f"{_metrics(d)} ({d.get('samples')} samples, {fmt_float(d.get('duration_s'), 1)}s)"
    ),
    "task.failed": lambda d: (
        f"{_r(d)}: peer {d.get('peer_id')} FAILED shard {d.get('shard')}: "
        f"{str(d.get('error') or '').strip()}"
    ),
    "task.lost": lambda d: (
        f"{_r(d)}: peer {d.get('peer_id')} lost shard {d.get('shard')} ({d.get('reason')})"
    ),
    "update.accepted": lambda d: (
        f"{_r(d)}: update of peer {d.get('peer_id')} accepted "
        f"(train {_metrics(d, 'train_loss', 'train_accuracy')})"
    ),
    "update.rejected": lambda d: (
        f"{_r(d)}: update of peer {d.get('peer_id')} REJECTED: {d.get('reason')} ({d.get('code')})"
    ),
    "update.checked": lambda d: (
        f"{_r(d)}: check of shard {d.get('shard')}: the updates of peers {d.get('peer_id')} "
        f"and {d.get('other_peer_id')} "
        + ("agree" if d.get("agree") else "DISAGREE")
        + f" (distance {_g(d.get('distance'))}, tolerance {_g(d.get('tolerance'))})"
    ),
    "round.closed": lambda d: (
        f"{_r(d)} closed ({d.get('reason')}): {len(d.get('included') or [])} update(s)"
        + _left_out(d)
    ),
    "round.waiting": lambda d: (
        f"{_r(d)} waits for peers (attempt {d.get('attempt')}): {d.get('online')} online, "
        f"{d.get('needed')} needed, until {_clock(d.get('until'))}"
    ),
    "round.failed": lambda d: (
        f"{_r(d)} FAILED: {d.get('accepted')} update(s), min_peers {d.get('min_peers')}"
        + ("" if d.get("counted", True) else " (peers offline: not counted)")
        + (
            f"; trying again at {_clock(d['retry_at'])}"
            if d.get("retry") and d.get("retry_at")
            else "; trying again"
            if d.get("retry")
            else ""
        )
    ),
    "model.diverged": lambda d: f"model v{d.get('version')} DIVERGED: {d.get('reason')}",
    "model.version_created": lambda d: f"model v{d.get('version')} written ({d.get('strategy')})",
    "model.evaluated": lambda d: f"model v{d.get('version')} on the holdout: {_metrics(d)}",
    "model.exported": lambda d: f"final model exported (v{d.get('version')})",
    "peer.excluded": lambda d: (
        f"peer {d.get('peer_id')} excluded after {d.get('strikes')} strike(s): {d.get('reason')}"
    ),
    "job.completed": lambda d: (
        f"job completed: final model v{d.get('final_version')}, {_metrics(d)}"
    ),
    "job.failed": lambda d: f"job FAILED: {d.get('reason')} ({d.get('code')})",
    "job.cancelled": lambda d: f"job cancelled by {d.get('by')}",
}
_STYLE = {
    "task.failed": "red",
    "dataset.sharding_failed": "red",
    "update.rejected": "red",
    "round.failed": "red",
    "round.waiting": "yellow",
    "model.diverged": "bold red",
    "job.failed": "bold red",
    "peer.excluded": "yellow",
    "task.lost": "yellow",
    "job.cancelled": "bold yellow",
    "job.completed": "bold green",
    "round.opened": "cyan",
    "round.closed": "cyan",
    "model.evaluated": "green",
}


def _clock(value: Any) -> str:
    try:
        return datetime.fromisoformat(str(value)).strftime("%H:%M:%S")
    except ValueError:
        return "--:--:--"


def event_text(event: dict[str, Any]) -> Text:
    """One event as a log line: ``HH:MM:SS  what happened`` (plus a failed task's
    traceback, indented); an event type it does not know prints its type."""
    kind = str(event.get("type") or "?")
    data = event.get("data") if isinstance(event.get("data"), dict) else {}
    render = _LINES.get(kind)
    body = render(data or {}) if render else kind
    text = Text(f"{_clock(event.get('occurred_at'))}  ", style="dim")
    text.append(" ".join(body.split()) if "\n" in body else body, style=_STYLE.get(kind, ""))
    traceback = (data or {}).get("traceback")
    if kind == "task.failed" and traceback:
        for line in str(traceback).rstrip().splitlines():
            text.append(f"\n          {line}", style="dim red")
    return text
