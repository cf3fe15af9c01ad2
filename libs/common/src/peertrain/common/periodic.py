"""Background work that repeats: one helper instead of a hand-written loop per service."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog

__all__ = ["Periodic"]

log = structlog.get_logger(__name__)


class Periodic:
    """Run ``work`` every ``interval_s`` seconds in a background task.

    A failing run is logged and the loop goes on (a database or broker may be away for
    a while); only ``stop()`` ends it.

    Parameters
    ----------
    name
        Names the task and its log lines.
    interval_s
        Pause between the end of one run and the start of the next.
    work
        The coroutine function to run.
    """

    def __init__(self, name: str, interval_s: float, work: Callable[[], Awaitable[object]]):
        self.name = name
        self.interval_s = interval_s
        self.work = work
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """Whether the loop is started."""
        return self._task is not None

    def start(self) -> None:
        """Start the loop (idempotent)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        """Stop the loop and wait for it to end."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.work()
            except Exception as exc:
                log.warning("periodic task failed; retrying later", task=self.name, error=repr(exc))
