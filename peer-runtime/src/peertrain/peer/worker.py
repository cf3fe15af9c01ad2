"""The worker: a thread that does the work, so a long task never stalls the listener.

Training arrives later (tasks are accepted and logged for now). The listener hands
over each message it accepted with :meth:`Worker.submit` and never waits for it.
"""

from __future__ import annotations

import json
import queue
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

__all__ = ["WorkItem", "Worker"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class WorkItem:
    """A message from the peer's own queue."""

    routing_key: str
    body: bytes
    message_id: str | None = None
    received_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def payload(self) -> Any:
        """The body as JSON (``None`` if it is not JSON)."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


_STOP = object()


class Worker:
    """Runs work items one at a time on its own thread."""

    def __init__(self) -> None:
        self._queue: queue.Queue[WorkItem | object] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.handled = 0

    def start(self) -> None:
        """Start the thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="peertrain-worker", daemon=True)
            self._thread.start()

    def submit(self, item: WorkItem) -> None:
        """Queue ``item`` (returns at once)."""
        self._queue.put(item)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Finish the current item and stop (items still queued are dropped)."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join(timeout_s)
            self._thread = None

    @property
    def backlog(self) -> int:
        """Items waiting."""
        return self._queue.qsize()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP or not isinstance(item, WorkItem):
                return
            try:
                self.handle(item)
            except Exception:
                log.exception("work item failed", routing_key=item.routing_key)
            self.handled += 1

    def handle(self, item: WorkItem) -> None:
        """Do the work (a stub until training arrives: it logs what came in)."""
        payload = item.payload()
        kind = payload.get("type") if isinstance(payload, dict) else None
        log.info(
            "work item received",
            routing_key=item.routing_key,
            message_id=item.message_id,
            kind=kind,
            size=len(item.body),
        )
