"""Per-key token buckets: how many messages a peer may send, without I/O.

Each key gets ``burst`` tokens and earns ``rate_per_s`` more a second (up to
``burst``); a message spends one. The clock is passed in. Keys are peer ids; the
table is cleared when it holds ``max_keys`` (a flood of made-up keys costs memory
once, never without bound).
"""

from __future__ import annotations

__all__ = ["RateLimiter"]


class RateLimiter:
    """Token buckets by key.

    Parameters
    ----------
    rate_per_s
        Tokens earned per second (the sustained rate allowed).
    burst
        Bucket size (what may arrive at once).
    max_keys
        Keys tracked at most.
    """

    __slots__ = ("_buckets", "burst", "max_keys", "rate_per_s")

    def __init__(self, rate_per_s: float, burst: float, *, max_keys: int = 200_000) -> None:
        if rate_per_s <= 0 or burst < 1:
            raise ValueError("rate_per_s must be > 0 and burst >= 1")
        self.rate_per_s = rate_per_s
        self.burst = float(burst)
        self.max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}

    def allow(self, key: str, now: float) -> bool:
        """Spend one token of ``key`` at ``now`` (seconds); ``False`` when it has none."""
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self.max_keys:
                self._buckets.clear()
            self._buckets[key] = (self.burst - 1.0, now)
            return True
        tokens, at = bucket
        tokens = min(self.burst, tokens + (now - at) * self.rate_per_s) if now > at else tokens
        if tokens < 1.0:
            self._buckets[key] = (tokens, max(now, at))
            return False
        self._buckets[key] = (tokens - 1.0, max(now, at))
        return True

    def forget(self, key: str) -> None:
        """Drop ``key``'s bucket."""
        self._buckets.pop(key, None)

    def __len__(self) -> int:
        return len(self._buckets)
