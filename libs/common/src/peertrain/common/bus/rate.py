"""Per-sender bounds on what a consumer accepts: messages and bytes a second.

Peers are untrusted and share the telemetry queues, so one that sends too much must
cost the others nothing: a consumer asks :meth:`SenderBudget.admit` for every message
before it does any work on it, and drops (counts, logs) what is over the sender's
budget. A token bucket per sender and per dimension: ``rate`` a second on average,
``burst`` at once. Pure: the clock is passed in. Memory is bounded: at most
``max_senders`` buckets (the least recently seen go first; a full bucket is the same as
none, so forgetting an idle sender changes nothing).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = [
    "MAX_PEER_MESSAGE_BYTES",
    "PEER_BYTES_BURST",
    "PEER_BYTES_PER_S",
    "PEER_MESSAGES_BURST",
    "PEER_MESSAGES_PER_S",
    "Bound",
    "SenderBudget",
]

MAX_PEER_MESSAGE_BYTES = 128 * 1024
"""The largest body a peer may send (its largest legitimate one, a failure report with a
20,000-character traceback, is well under it)."""
PEER_MESSAGES_PER_S = 20.0
PEER_MESSAGES_BURST = 200.0
"""A peer's messages per queue: 20 a second on average, 200 at once (a task's progress
comes once per local epoch, which can be a few milliseconds on a small model)."""
PEER_BYTES_PER_S = 256 * 1024.0
PEER_BYTES_BURST = 4 * 1024 * 1024.0
"""A peer's bytes per queue: 256 KiB a second on average, 4 MiB at once."""


@dataclass(frozen=True)
class Bound:
    """``rate`` units a second on average, at most ``burst`` at once."""

    rate: float
    burst: float

    def __post_init__(self) -> None:
        if not (self.rate > 0 and self.burst >= 1):
            raise ValueError("a bound needs rate > 0 and burst >= 1")


@dataclass
class _Bucket:
    messages: float
    bytes: float
    at: float


class SenderBudget:
    """Token buckets per sender: ``messages`` a second and ``bytes`` a second.

    Examples
    --------
    >>> budget = SenderBudget(Bound(1, 2), Bound(100, 100))
    >>> [budget.admit("p", 10, now=0.0) for _ in range(3)]
    [True, True, False]
    >>> budget.admit("q", 10, now=0.0), budget.admit("p", 10, now=1.0)
    (True, True)
    """

    def __init__(
        self,
        messages: Bound = Bound(PEER_MESSAGES_PER_S, PEER_MESSAGES_BURST),
        bytes_: Bound = Bound(PEER_BYTES_PER_S, PEER_BYTES_BURST),
        *,
        max_senders: int = 100_000,
    ) -> None:
        self.messages, self.bytes, self.max_senders = messages, bytes_, max_senders
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def admit(self, sender: str, size: int, *, now: float) -> bool:
        """Whether ``sender`` may send one more message of ``size`` bytes at ``now``;
        if so, it is charged for it (a refused message costs nothing)."""
        bucket = self._buckets.pop(sender, None)
        if bucket is None:
            bucket = _Bucket(self.messages.burst, self.bytes.burst, now)
        elapsed = max(0.0, now - bucket.at)
        bucket.messages = min(self.messages.burst, bucket.messages + elapsed * self.messages.rate)
        bucket.bytes = min(self.bytes.burst, bucket.bytes + elapsed * self.bytes.rate)
        bucket.at = max(bucket.at, now)
        admitted = bucket.messages >= 1 and bucket.bytes >= size
        if admitted:
            bucket.messages -= 1
            bucket.bytes -= size
        self._buckets[sender] = bucket
        while len(self._buckets) > self.max_senders:
            self._buckets.popitem(last=False)
        return admitted

    def __len__(self) -> int:
        return len(self._buckets)
