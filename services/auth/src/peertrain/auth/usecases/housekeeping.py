"""Periodic chores: retire signing keys whose tokens have expired, purge dead state."""

from __future__ import annotations

from datetime import timedelta

from peertrain.common.periodic import Periodic

from .context import AuthContext
from .keys import retire_due

__all__ = ["Housekeeping"]

ENROLLMENT_KEEP = timedelta(days=7)
"""Expired enrollments stay listed this long, then go."""


class Housekeeping(Periodic):
    """A background task doing :meth:`run_once` every ``interval_s``."""

    def __init__(self, auth: AuthContext, *, interval_s: float) -> None:
        super().__init__("auth-housekeeping", interval_s, self.run_once)
        self.auth = auth

    async def run_once(self) -> None:
        """Retire due keys; delete expired sessions, throttle windows and enrollments."""
        auth = self.auth
        now = auth.now()
        await retire_due(auth)
        await auth.sessions.purge(now=now)
        await auth.throttle.purge(now=now)
        await auth.peers.purge_enrollments(before=now - ENROLLMENT_KEEP)
