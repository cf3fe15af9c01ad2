"""Background work: one named task started and stopped the same way everywhere, and
work that repeats on a timer (one helper instead of a hand-written loop per service)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import structlog

__all__ = ["Background", "Periodic"]

log = structlog.get_logger(__name__)


class Background:
    """One named background task: ``start()`` runs ``run`` (once; idempotent),
    ``stop()`` cancels it and waits for it to end.

    Parameters
    ----------
    name
        Names the task.
    run
        The coroutine function the task runs (usually a loop that never returns).
    """

    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.name = name
        self._body = run
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """Whether the task is started."""
        return self._task is not None

    def start(self) -> None:
        """Start the task (idempotent)."""
        if self._task is None:
            self._task = asyncio.create_task(self._body(), name=self.name)

    async def stop(self) -> None:
        """Cancel the task and wait for it to end."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


class Periodic(Background):
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
        super().__init__(name, self._run)
        self.interval_s = interval_s
        self.work = work

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.work()
            except Exception as exc:
                log.warning("periodic task failed; retrying later", task=self.name, error=repr(exc))
