"""A seeded fault schedule, Jepsen-style (pure: no I/O, no clock).

:func:`schedule` draws, from one seed, the faults that ``make chaos`` and the short chaos
test inject while jobs run: which component, how (SIGKILL, SIGTERM, or a hung link), when
(seconds from the start) and for how long it stays away. The same seed and targets give
the same sequence, so a failing run can be replayed fault for fault.

Rules the draw keeps:

* a fault starts at least every ``max_gap_s`` seconds (and at most every
  ``min_gap_s``) while fewer than ``max_concurrent`` are in effect, so faults overlap
  whenever one stays away longer than the next gap;
* a target is never hit again while it is still away (a fault on it ends first);
* at most ``max_concurrent`` faults are in effect at once, so that the platform is
  disturbed, not simply switched off.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

__all__ = ["Fault", "Target", "digest", "schedule"]

Action = Literal["kill", "term", "hang"]


@dataclass(frozen=True)
class Target:
    """Something a fault can hit: ``kind`` says how it is restarted."""

    name: str
    kind: Literal["stack", "service", "peer", "link"]

    @property
    def actions(self) -> tuple[Action, ...]:
        """How this target can be disturbed."""
        return ("hang",) if self.kind == "link" else ("kill", "term")


@dataclass(frozen=True)
class Fault:
    """``target`` is disturbed by ``action`` at ``at_s`` and back at ``at_s + down_s``."""

    index: int
    at_s: float
    target: str
    kind: str
    action: Action
    down_s: float

    @property
    def until_s(self) -> float:
        """When the target is back."""
        return self.at_s + self.down_s


def schedule(
    seed: int,
    targets: Sequence[Target],
    *,
    min_gap_s: float = 2.0,
    max_gap_s: float = 10.0,
    min_down_s: float = 1.0,
    max_down_s: float = 12.0,
    max_concurrent: int = 2,
) -> Iterator[Fault]:
    """The faults drawn from ``seed``, in time order, without end (take what you need)."""
    if not targets:
        raise ValueError("no targets")
    if not 0 < min_gap_s <= max_gap_s or not 0 < min_down_s <= max_down_s:
        raise ValueError("need 0 < min <= max for gaps and down times")
    rng = random.Random(seed)
    away: dict[str, float] = {}  # target -> when it is back
    at = 0.0
    index = 0
    while True:
        at += round(rng.uniform(min_gap_s, max_gap_s), 2)
        back = {name: until for name, until in away.items() if until > at}
        away = back
        free = [t for t in targets if t.name not in away]
        if len(away) >= max_concurrent or not free:
            at = min(away.values())  # wait until one is back; that moment starts the next
            continue
        target = free[rng.randrange(len(free))]
        action = target.actions[rng.randrange(len(target.actions))]
        down = round(rng.uniform(min_down_s, max_down_s), 2)
        index += 1
        away[target.name] = at + down
        yield Fault(index, round(at, 2), target.name, target.kind, action, down)


def digest(faults: Sequence[Fault]) -> str:
    """A short fingerprint of a fault sequence (two runs of a seed print the same)."""
    text = json.dumps([asdict(f) for f in faults], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
