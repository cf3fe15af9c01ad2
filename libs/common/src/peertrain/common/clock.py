"""The one clock every service and its tests read time from.

Monotonic time for what a process counts on (deadlines, intervals, budgets), wall-clock
time for what it records or tells others (``until`` in a lease, an event's instant).
Code that needs time takes a :class:`Clock`; tests and the simulation pass one they move
themselves (:class:`ManualClock`).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

__all__ = ["SYSTEM_CLOCK", "Clock", "ManualClock"]


class Clock:
    """The system's clocks (subclass, or use :class:`ManualClock`, to control time)."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock."""
        return time.monotonic()

    def now(self) -> datetime:
        """The wall-clock time, UTC."""
        return datetime.now(UTC)

    def time(self) -> float:
        """Wall-clock seconds since the epoch (:meth:`now` as a number)."""
        return self.now().timestamp()

    def wall_of(self, mono: float) -> datetime:
        """The wall-clock time of monotonic instant ``mono``."""
        return self.now() - timedelta(seconds=self.monotonic() - mono)


SYSTEM_CLOCK = Clock()
"""The real clocks."""


class ManualClock(Clock):
    """Time that moves only when told to (tests, the simulation's virtual time).

    Both readings start at ``start`` and move together by :meth:`advance` or :meth:`set`.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._start = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._elapsed = 0.0

    def monotonic(self) -> float:
        """Seconds since the clock was made (moved by hand)."""
        return self._elapsed

    def now(self) -> datetime:
        """``start`` plus the seconds moved so far."""
        return self._start + timedelta(seconds=self._elapsed)

    def advance(self, seconds: float) -> None:
        """Move both readings on by ``seconds`` (never back)."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._elapsed += seconds

    def set(self, when: datetime) -> None:
        """Move on to ``when`` (no-op if it is not later)."""
        self._elapsed = max(self._elapsed, (when - self._start).total_seconds())
