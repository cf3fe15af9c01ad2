"""The outbox: telemetry the worker thread wants published, kept until the broker confirms.

Any thread may :meth:`Outbox.put` a message; the listener's sender task (on the asyncio
loop) publishes the oldest one, waits for the broker's confirm and only then drops it
with :meth:`Outbox.confirmed`. A message that was not confirmed when the connection
dropped is therefore published again in the next session, with the same
``message_id`` (consumers dedup on it), and the order is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field

from pydantic import BaseModel

__all__ = ["Outbox", "Outgoing"]


@dataclass(frozen=True)
class Outgoing:
    """One message to publish on telemetry as ``peer.<id>.<kind>``."""

    kind: str
    body: bytes
    message_id: str = field(default_factory=lambda: uuid.uuid4().hex)


class Outbox:
    """A thread-safe FIFO of :class:`Outgoing` with an awaitable "not empty".

    Parameters
    ----------
    max_items
        Bound on waiting messages; beyond it the oldest are dropped (a peer cut off
        for hours must not grow without bound; the platform reassigns its tasks).
    """

    def __init__(self, max_items: int = 10_000) -> None:
        self._items: deque[Outgoing] = deque()
        self._lock = threading.Lock()
        self._max = max_items
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Event | None = None
        self._empty = asyncio.Event()
        self.dropped = 0

    def put(self, kind: str, body: BaseModel | bytes) -> None:
        """Queue ``body`` (a pydantic model or JSON bytes) for publishing; thread-safe."""
        data = body if isinstance(body, bytes) else body.model_dump_json().encode()
        item = Outgoing(kind, data)
        with self._lock:
            self._items.append(item)
            while len(self._items) > self._max:
                self._items.popleft()
                self.dropped += 1
            loop, ready = self._loop, self._ready
        if loop is not None and ready is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(ready.set)

    def peek(self) -> Outgoing | None:
        """The oldest message not yet confirmed."""
        with self._lock:
            return self._items[0] if self._items else None

    def confirmed(self, item: Outgoing) -> None:
        """Drop ``item`` (the broker confirmed it); on the asyncio loop."""
        with self._lock:
            if self._items and self._items[0] is item:
                self._items.popleft()
            empty = not self._items
        if empty:
            self._empty.set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    async def wait(self) -> Outgoing:
        """The oldest message, waiting for one if there is none (on the asyncio loop)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._loop is not loop or self._ready is None:
                self._loop, self._ready = loop, asyncio.Event()
            ready = self._ready
        while True:
            ready.clear()
            item = self.peek()
            if item is not None:
                return item
            await ready.wait()

    async def drained(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for every message to be confirmed."""
        if not len(self):
            return True
        self._empty.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._empty.wait(), timeout_s)
        return not len(self)
