"""Job states and what a watcher sees on each poll."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["JOB_STATES", "TERMINAL_STATES", "JobProgress", "dataset_outcome"]

JOB_STATES = ("created", "sharding", "running", "completed", "failed", "cancelled")
TERMINAL_STATES = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True)
class JobProgress:
    """One poll of a job: its document and its metrics (empty until there are any)."""

    job: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """``created``, ``sharding``, ``running``, ``completed``, ``failed`` or ``cancelled``."""
        return str(self.job.get("state") or "unknown")

    @property
    def done(self) -> bool:
        """Whether the job reached a final state."""
        return self.state in TERMINAL_STATES

    @property
    def rounds(self) -> list[dict[str, Any]]:
        """Per-round metrics, by round."""
        rounds = self.metrics.get("rounds") or []
        items = [r for r in rounds if isinstance(r, dict)]
        return sorted(items, key=lambda r: r.get("round") or 0)


def dataset_outcome(dataset: dict[str, Any]) -> str | None:
    """``validated`` or ``rejected`` once validation ended, else ``None``."""
    status = dataset.get("status")
    return status if status in ("validated", "rejected") else None


def rejection_message(dataset: dict[str, Any]) -> str:
    """One line saying why a dataset was rejected."""
    error = dataset.get("error")
    reason = error.get("message") if isinstance(error, dict) else None
    return f"dataset {dataset.get('id', '?')} was rejected: {reason or 'no reason given'}"
