"""Exponential backoff with jitter, for reconnects and retries.

A young outage is usually a restart (RabbitMQ, the gateway, a service): it is back in
seconds, and a peer that waits 8 s more than it must is a peer the platform cannot
reach. So with ``early_max_s`` set, delays stay at most that long during the first
``early_s`` seconds of an outage, and only then go on doubling up to ``max_s`` (a
peer cut off for long must not knock every second). Each delay is drawn uniformly
between ``(1 - jitter)`` times its base and the base itself, never above it: peers
that lost the broker together do not all come back in the same instant, and a cap
stays a cap.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

__all__ = ["Backoff"]


class Backoff:
    """Delays that double from ``initial_s`` up to ``max_s``, jittered below each base.

    Call :meth:`reset` once things work again; the first :meth:`next` after it starts
    the outage's clock.

    Parameters
    ----------
    initial_s, max_s
        The first base delay, and the largest.
    jitter
        Fraction of each base drawn off at random (0: no jitter).
    early_max_s, early_s
        The largest base during the first ``early_s`` seconds of an outage (``None``:
        no such cap).
    rng, clock
        Randomness and monotonic seconds (tests inject theirs).
    """

    def __init__(
        self,
        *,
        initial_s: float = 0.5,
        max_s: float = 15.0,
        jitter: float = 0.5,
        early_max_s: float | None = None,
        early_s: float = 60.0,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < initial_s <= max_s:
            raise ValueError("need 0 < initial_s <= max_s")
        if not 0 <= jitter <= 1:
            raise ValueError("need 0 <= jitter <= 1")
        if early_max_s is not None and early_max_s <= 0:
            raise ValueError("early_max_s must be > 0")
        self.initial_s = initial_s
        self.max_s = max_s
        self.jitter = jitter
        self.early_max_s = early_max_s
        self.early_s = early_s
        self._rng = rng or random.Random()
        self._clock = clock
        self._next = initial_s
        self._since: float | None = None
        self.attempts = 0

    def next(self) -> float:
        """The next delay."""
        now = self._clock()
        if self._since is None:
            self._since = now
        base = min(self._next, self.cap(now - self._since))
        self._next = min(base * 2, self.max_s)
        self.attempts += 1
        return base * (1.0 - self.jitter * self._rng.random())

    def cap(self, outage_s: float) -> float:
        """The largest base delay ``outage_s`` seconds into an outage."""
        if self.early_max_s is not None and outage_s < self.early_s:
            return min(self.early_max_s, self.max_s)
        return self.max_s

    def reset(self) -> None:
        """Start again from ``initial_s`` (the next delay starts a new outage)."""
        self._next = self.initial_s
        self._since = None
        self.attempts = 0
