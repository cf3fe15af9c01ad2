"""The clocks leases are judged by (tests pass one they move themselves)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

__all__ = ["LeaseClock"]


class LeaseClock:
    """Monotonic time for what this instance counts on, wall-clock UTC for what the
    lease documents say (tests may subclass)."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock."""
        return time.monotonic()

    def now(self) -> datetime:
        """The wall-clock time, UTC."""
        return datetime.now(UTC)
