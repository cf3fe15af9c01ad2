"""What a consumer does with a message whose handler failed: a decision as a value.

Messages are handled one after the other, in queue order (see
:mod:`peertrain.common.bus.ordering`), so whatever a consumer does while one message
fails, every message behind it waits. The rules, pure and clock-free:

* A failure that repeats (a bug, a poison message: :func:`~peertrain.common.faults.is_transient`
  says no) is never retried in place: the message is **set aside** at once (returned to
  the queue, which redelivers it after the messages already on their way, counting one
  delivery), and dead-lettered on its last allowed delivery. The line never waits on it.
* A dependency that is away (the store, the bucket, the broker) fails every message,
  so the line is **held** and the message tried again with backoff: setting it aside
  would only spend the delivery limits of the messages behind it. For as long as
  :data:`OUTAGE_BUDGET_S`; past it, the message is dead-lettered after all.
* But a message that fails "transiently" on its own (a timeout that only it meets)
  must not hold the line for the whole budget: once it has held it for :data:`HOLD_S`,
  it is set aside, once per outage, and the next message tells: if it passes, the
  dependency was fine (the outage ends), and the set-aside message holds the line for
  at most ``HOLD_S`` at each of its remaining deliveries; if it fails too, it is an
  outage, and the line is held until it ends.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "HOLD_S",
    "OUTAGE_BUDGET_S",
    "RETRY_BASE_S",
    "RETRY_OUTAGE_MAX_S",
    "DeadLetter",
    "Failure",
    "Outage",
    "Retry",
    "SetAside",
    "decide",
]

RETRY_BASE_S = 0.1
RETRY_OUTAGE_MAX_S = 5.0
OUTAGE_BUDGET_S = 900.0
"""How long a message waits out an outage before it is dead-lettered after all."""
HOLD_S = 30.0
"""How long one message failing "transiently" holds the line before it is set aside
once, to learn whether the others pass. Long enough that the usual outage (a broker
restart, a store failing over: seconds) keeps the queue's order whole; setting aside
takes one message out of order."""


@dataclass(frozen=True)
class Retry:
    """Keep the message and try it again in place after ``delay_s``."""

    delay_s: float


@dataclass(frozen=True)
class SetAside:
    """Return the message to the queue (one delivery spent) and go on with the next."""

    reason: str


@dataclass(frozen=True)
class DeadLetter:
    """Reject the message to its dead-letter queue."""

    reason: str


Decision = Retry | SetAside | DeadLetter


@dataclass
class Outage:
    """A subscription's run of transient failures: since when, and whether a message was
    set aside in it (one probe per outage). Ends at the first message handled."""

    since: float | None = None
    set_aside: bool = False

    def failed(self, now: float) -> None:
        """A message failed because a dependency is away."""
        if self.since is None:
            self.since = now

    def passed(self) -> None:
        """A message was handled: whatever was away is back."""
        self.since = None
        self.set_aside = False

    def age(self, now: float) -> float:
        """Seconds since the outage began (0 when there is none)."""
        return 0.0 if self.since is None else now - self.since


@dataclass(frozen=True)
class Failure:
    """One failed try of one delivery.

    Attributes
    ----------
    transient
        A dependency is away (:func:`~peertrain.common.faults.is_transient`).
    deliveries
        How many times the broker delivered the message before this delivery (its
        ``x-delivery-count``: a message is delivered once, then up to ``delivery_limit``
        times again).
    tries
        Tries of this delivery so far (this failed one included).
    held_s
        Seconds this delivery has held the line since its first failure.
    """

    transient: bool
    deliveries: int
    tries: int
    held_s: float


def decide(failure: Failure, outage: Outage, *, delivery_limit: int, now: float) -> Decision:
    """What to do after ``failure`` (``outage`` is updated: call once per failure)."""
    # RabbitMQ's x-delivery-limit: one delivery plus ``delivery_limit`` redeliveries
    last = failure.deliveries >= delivery_limit
    if not failure.transient:
        if last:
            return DeadLetter("failed on its last allowed delivery")
        return SetAside("failed; the messages behind it go first")
    outage.failed(now)
    if outage.age(now) >= OUTAGE_BUDGET_S:
        return DeadLetter(f"a dependency was away for more than {OUTAGE_BUDGET_S:.0f} s")
    if failure.held_s >= HOLD_S and not outage.set_aside and not last:
        outage.set_aside = True
        return SetAside("held the line; does the next message pass?")
    delay = RETRY_BASE_S * 2 ** min(failure.tries, 16)
    return Retry(min(delay, RETRY_OUTAGE_MAX_S))
