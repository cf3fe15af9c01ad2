"""Asynchronous rounds (FedBuff): how much a stale update counts.

In an asynchronous job a peer trains on the version it was given and the aggregator
builds a new version every ``buffer`` accepted updates, so an update may arrive
``s`` versions after the one it started from (its staleness). It is folded with weight
``samples * factor(s)`` into the buffer's accumulator (any strategy), and refused when
``s`` exceeds ``max_staleness``.

``factor`` is ``1 / (1 + s) ** exponent`` (``exponent`` 0.5 by default: FedBuff's
``1 / sqrt(1 + s)``; 0: staleness is ignored).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Staleness"]


@dataclass(frozen=True)
class Staleness:
    """How stale an update may be, and what that costs it."""

    max_staleness: int = 10
    exponent: float = 0.5

    def __post_init__(self) -> None:
        if self.max_staleness < 0:
            raise ValueError("max_staleness must be at least 0")
        if self.exponent < 0:
            raise ValueError("exponent must be at least 0")

    def admits(self, staleness: int) -> bool:
        """Whether an update ``staleness`` versions old is folded at all."""
        return 0 <= staleness <= self.max_staleness

    def factor(self, staleness: int) -> float:
        """The weight factor of an update ``staleness`` versions old (1 when fresh)."""
        if not self.admits(staleness):
            raise ValueError(f"staleness {staleness} is outside 0..{self.max_staleness}")
        return float((1.0 + staleness) ** -self.exponent)

    def weight(self, samples: int, staleness: int) -> float:
        """The update's weight in its buffer."""
        return samples * self.factor(staleness)
