"""Keeping the durable read model in step with memory, and rebuilding it from the log.

The :class:`Projector` writes what changed every ``flush_interval_s``. :func:`rebuild`
is ``replay``: fold
every peer event of the log into a fresh directory, drop the stored read model and
write the new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

import structlog

from peertrain.common.eventlog import EventLog
from peertrain.common.events.peers import PEER_EVENT_TYPES
from peertrain.common.tasks import Periodic

from .directory import Directory
from .store import ReadModelStore

__all__ = ["Projector", "Rebuilt", "catch_up", "rebuild"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Rebuilt:
    """What a replay did."""

    peers: int
    events: int
    position: int
    took_s: float


async def catch_up(event_log: EventLog, directory: Directory) -> int:
    """Fold the peer events appended after the directory's position; returns how many."""
    folded = 0
    after = directory.position
    async for event in event_log.read_all(after_position=after, types=PEER_EVENT_TYPES):
        directory.apply(event, strict=False)
        folded += 1
    return folded


async def rebuild(event_log: EventLog, store: ReadModelStore) -> tuple[Directory, Rebuilt]:
    """Replay: a directory folded from the whole log, stored in place of the old one."""
    started = time.perf_counter()
    fresh = Directory()
    events = await catch_up(event_log, fresh)
    records = list(fresh.records())
    fresh.take_dirty()
    await store.drop()
    await store.insert_all(records, checkpoint=fresh.position)
    took = time.perf_counter() - started
    log.info("read model rebuilt from the log", peers=len(records), events=events, took_s=took)
    return fresh, Rebuilt(len(records), events, fresh.position, took)


class Projector:
    """Background writer of the durable read model.

    Parameters
    ----------
    directory
        The in-memory read model (what changed in it is written).
    store
        The collections.
    """

    def __init__(
        self,
        directory: Directory,
        store: ReadModelStore,
        *,
        flush_interval_s: float = 1.0,
    ) -> None:
        self.directory = directory
        self.store = store
        self.flush_interval_s = flush_interval_s
        self._loop = Periodic("registry-projector", flush_interval_s, self.flush)
        self.lock = asyncio.Lock()
        """Held by every write to ``peers``: a replay holds it to rebuild undisturbed."""

    def start(self) -> None:
        """Flush in the background."""
        self._loop.start()

    async def stop(self) -> None:
        """Stop, after a last flush (best effort)."""
        await self._loop.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.flush(), 5)

    async def flush(self) -> int:
        """Write the records that changed since the last flush; returns how many."""
        async with self.lock:
            return await self.flush_locked()

    async def flush_locked(self) -> int:
        """:meth:`flush` for a caller that holds :attr:`lock`."""
        position = self.directory.position
        dirty = self.directory.take_dirty()
        try:
            return await self.store.save(dirty, checkpoint=position if dirty else None)
        except BaseException:
            self.directory.mark_dirty(dirty)
            raise
