"""Periodic chores: retire signing keys whose tokens have expired, purge dead state."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import structlog

from .usecases import AuthContext
from .usecases.keys import retire_due

__all__ = ["Housekeeping"]

log = structlog.get_logger(__name__)

ENROLLMENT_KEEP = timedelta(days=7)
"""Expired enrollments stay listed this long, then go."""


class Housekeeping:
    """A background task doing :meth:`run_once` every ``interval_s``."""

    def __init__(self, auth: AuthContext, *, interval_s: float) -> None:
        self.auth = auth
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    async def run_once(self) -> None:
        """Retire due keys; delete expired sessions, throttle windows and enrollments."""
        auth = self.auth
        now = auth.now()
        await retire_due(auth)
        await auth.sessions.purge(now=now)
        await auth.throttle.purge(now=now)
        await auth.peers.purge_enrollments(before=now - ENROLLMENT_KEEP)

    def start(self) -> None:
        """Start the background loop."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="auth-housekeeping")

    async def stop(self) -> None:
        """Stop the background loop."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.run_once()
            except Exception as exc:  # the database may be away for a while
                log.warning("housekeeping failed", error=repr(exc))
