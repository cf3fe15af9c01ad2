"""Periodic chores: retire signing keys whose tokens have expired, purge dead state."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from .keys import retire_due

if TYPE_CHECKING:
    from peertrain.auth.application import AuthApp

__all__ = ["ENROLLMENT_KEEP", "housekeeping"]

ENROLLMENT_KEEP = timedelta(days=7)
"""Expired enrollments stay listed this long, then go."""


async def housekeeping(auth: AuthApp) -> None:
    """Retire due keys; delete expired sessions, throttle windows and enrollments."""
    now = auth.now()
    await retire_due(auth)
    await auth.sessions.purge(now=now)
    await auth.throttle.purge(now=now)
    await auth.peers.purge_enrollments(before=now - ENROLLMENT_KEEP)
