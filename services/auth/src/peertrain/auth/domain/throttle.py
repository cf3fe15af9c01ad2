"""Login throttling: at most N failed logins per (username, address) per window.

A fixed window opens with the first attempt; each attempt is counted *before* the
password is checked (so parallel guesses cannot slip past the limit) and a success
clears the window. When the window holds N counted attempts, further attempts are
refused until it ends.
"""

from __future__ import annotations

import hashlib
import math
from datetime import datetime, timedelta

__all__ = ["retry_after_s", "throttle_key", "window_open"]


def throttle_key(username: str, address: str) -> str:
    """A fixed-size key for (canonical username, client address)."""
    return hashlib.sha256(f"{username}\x00{address}".encode()).hexdigest()


def window_open(started: datetime, now: datetime, window_s: int) -> bool:
    """Whether a window that started at ``started`` still runs at ``now``."""
    return now < started + timedelta(seconds=window_s)


def retry_after_s(started: datetime, now: datetime, window_s: int) -> int:
    """Whole seconds until the window ends (at least 1)."""
    left = (started + timedelta(seconds=window_s) - now).total_seconds()
    return max(1, math.ceil(left))
