"""Which peers' keys carry a flood of refused heartbeats, without I/O.

Refusals are counted per key (the peer id in the routing key) and per second of the
injected clock; a key is *flooded* by the refusal that reaches ``refusals_per_s`` in
one second, and by every later one in that second. The shell holds only that peer's
liveness while its key floods (see :meth:`LivenessTracker.hold`): a flood costs the
flooder, never the others. The table is cleared when it holds ``max_keys``.
"""

from __future__ import annotations

__all__ = ["FloodWatch"]


class FloodWatch:
    """Refused heartbeats by key and second.

    Parameters
    ----------
    refusals_per_s
        Refusals on one key within one second that make a flood.
    max_keys
        Keys tracked at most.
    """

    __slots__ = ("_counts", "max_keys", "refusals_per_s")

    def __init__(self, refusals_per_s: int, *, max_keys: int = 200_000) -> None:
        if refusals_per_s < 1:
            raise ValueError("refusals_per_s must be >= 1")
        self.refusals_per_s = refusals_per_s
        self.max_keys = max_keys
        self._counts: dict[str, tuple[int, int]] = {}

    def refused(self, key: str, now: float) -> bool:
        """Count one refusal on ``key`` at ``now``; whether ``key`` is at a flood's rate."""
        second = int(now)
        at, count = self._counts.get(key, (second, 0))
        if at != second:
            count = 0
        elif key not in self._counts and len(self._counts) >= self.max_keys:
            self._counts.clear()
        count += 1
        self._counts[key] = (second, count)
        return count >= self.refusals_per_s

    def forget(self, key: str) -> None:
        """Drop ``key``'s count."""
        self._counts.pop(key, None)

    def __len__(self) -> int:
        return len(self._counts)
