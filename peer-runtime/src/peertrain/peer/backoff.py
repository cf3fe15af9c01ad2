"""Exponential backoff with jitter, for reconnects and retries."""

from __future__ import annotations

import random

__all__ = ["Backoff"]


class Backoff:
    """Delays that double from ``initial_s`` up to ``max_s``, with +-``jitter`` spread.

    Call :meth:`reset` once things work again.
    """

    def __init__(
        self,
        *,
        initial_s: float = 0.5,
        max_s: float = 15.0,
        jitter: float = 0.2,
        rng: random.Random | None = None,
    ) -> None:
        if not 0 < initial_s <= max_s:
            raise ValueError("need 0 < initial_s <= max_s")
        self.initial_s = initial_s
        self.max_s = max_s
        self.jitter = jitter
        self._rng = rng or random.Random()
        self._next = initial_s
        self.attempts = 0

    def next(self) -> float:
        """The next delay."""
        base = self._next
        self._next = min(self._next * 2, self.max_s)
        self.attempts += 1
        spread = base * self.jitter
        return max(0.0, base + self._rng.uniform(-spread, spread))

    def reset(self) -> None:
        """Start again from ``initial_s``."""
        self._next = self.initial_s
        self.attempts = 0
