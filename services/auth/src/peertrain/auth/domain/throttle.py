"""Throttling by slots: at most N counted attempts per key per fixed window.

Each counted attempt is one *slot* of its key's window: slot ``n`` of window ``w`` has
the id ``<key>:<w>:<n>`` and ``n < N``. Taking a slot is inserting that id, which the
database's unique ``_id`` lets succeed once; so however many attempts race, at most N
get a slot in one window (no read-modify-write, which FerretDB does not run atomically).
Windows are fixed and aligned on the epoch, so a burst across a boundary may get up to
2N, as with any fixed window; over time it is N per window.

The limits (see :class:`Limits`):

- ``login_user``: failed logins per (username, client address); a success clears them;
- ``login_address``: failed logins per client address, whatever the username (password
  spraying); a success gives its slot back;
- ``register``: registrations per client address (each costs an Argon2 hash).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["Limit", "Limits", "Refused", "Slot", "Window", "probe_order", "slot_id"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Window:
    """One fixed window of a limit: its number since the epoch and its end."""

    index: int
    ends_at: datetime

    def retry_after_s(self, now: datetime) -> int:
        """Whole seconds until the window ends (at least 1)."""
        return max(1, math.ceil((self.ends_at - now).total_seconds()))


@dataclass(frozen=True)
class Limit:
    """At most ``max_attempts`` counted attempts per key in each ``window_s`` window.

    ``name`` labels refusals (metrics, logs) and separates the keys of limits;
    ``what`` is what the refusal says there were too many of.
    """

    name: str
    max_attempts: int
    window_s: int
    what: str

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.window_s < 1:
            raise ValueError(f"limit {self.name}: max_attempts and window_s must be >= 1")

    def key(self, *parts: str) -> str:
        """A fixed-size key of this limit for ``parts`` (say the username and address)."""
        raw = "\x00".join((self.name, *parts))
        return hashlib.sha256(raw.encode()).hexdigest()

    def window(self, now: datetime) -> Window:
        """The window that holds ``now``."""
        index = math.floor((now - _EPOCH).total_seconds() / self.window_s)
        return Window(index, _EPOCH + timedelta(seconds=(index + 1) * self.window_s))


@dataclass(frozen=True)
class Limits:
    """The auth service's limits."""

    login_user: Limit
    login_address: Limit
    register: Limit

    @classmethod
    def of(
        cls,
        *,
        login_max_failures: int,
        login_max_failures_per_address: int,
        login_window_s: int,
        register_max_per_address: int,
        register_window_s: int,
    ) -> Limits:
        """The three limits from their settings."""
        return cls(
            login_user=Limit("login_user", login_max_failures, login_window_s, "failed logins"),
            login_address=Limit(
                "login_address",
                login_max_failures_per_address,
                login_window_s,
                "failed logins from this address",
            ),
            register=Limit(
                "register", register_max_per_address, register_window_s, "registrations"
            ),
        )


@dataclass(frozen=True)
class Slot:
    """A slot taken: the attempt may go on."""

    id: str


@dataclass(frozen=True)
class Refused:
    """No slot left in this window."""

    limit: str
    retry_after_s: int


def slot_id(key: str, window: int, slot: int) -> str:
    """The ``_id`` of slot ``slot`` of ``key`` in window ``window``."""
    return f"{key}:{window}:{slot}"


def probe_order(max_attempts: int, taken: int) -> Iterator[int]:
    """Slots to try, in order: from ``taken`` (how many seemed taken) up, then the rest.

    The guess only saves inserts bound to fail; every slot is tried before giving up,
    and one already taken is refused by the database, so a wrong guess costs no safety.
    """
    start = min(max(taken, 0), max_attempts)
    return itertools.chain(range(start, max_attempts), range(start))
