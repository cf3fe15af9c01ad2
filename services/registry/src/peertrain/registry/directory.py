"""The peer directory: the registry's read model, in memory, in its own database, and
rebuilt from the log.

(Named for what it is: the registry has no other "projection". The orchestrator's
``domain.Directory`` is another thing, its jobs' peers.)

:class:`PeerDirectory` holds one :class:`PeerRecord` per peer; every query is answered
from it (a dictionary look-up or a scan of a few thousand small records), never from
MongoDB: on FerretDB every query scans its collection. The :class:`Projector` writes
what changed to the ``peers`` collection every ``flush_interval_s``; start-up reads
that copy and folds the log beyond its checkpoint (:func:`catch_up`). :func:`rebuild`
is ``replay``: fold every peer event of the log into a fresh directory, drop the stored
read model and write the new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum

import structlog

from peertrain.common.eventlog import LogPort
from peertrain.common.events import RecordedEvent
from peertrain.common.events.peers import PEER_EVENT_TYPES
from peertrain.common.periodic import Periodic

from .domain.peer import PeerRecord, apply
from .store import ReadModel

__all__ = ["Applied", "PeerDirectory", "Projector", "Rebuilt", "catch_up", "rebuild"]

log = structlog.get_logger(__name__)


class Applied(Enum):
    """What :meth:`PeerDirectory.apply` did with an event."""

    APPLIED = "applied"
    DUPLICATE = "duplicate"
    GAP = "gap"
    """The event is ahead of what the directory knows: read the stream first."""


def _peer_id(stream: str) -> str | None:
    kind, _, peer_id = stream.partition(":")
    return peer_id if kind == "peer" and peer_id else None


class PeerDirectory:
    """Peer records by id, folded from the peer streams, with what changed since a flush."""

    def __init__(self, records: Iterable[PeerRecord] = (), *, position: int = 0) -> None:
        self._records: dict[str, PeerRecord] = {r.peer_id: r for r in records}
        self.position = position
        """The largest log position folded in."""
        self._dirty: set[str] = set()

    def get(self, peer_id: str) -> PeerRecord | None:
        """The record of ``peer_id``, if any event of it was folded."""
        return self._records.get(peer_id)

    def apply(self, event: RecordedEvent, *, strict: bool = True) -> Applied:
        """Fold ``event`` if it is the next one of its stream.

        With ``strict=False`` (replaying the whole log in order) a gap in ``seq`` is
        accepted: events of types not replayed may sit in between.
        """
        peer_id = _peer_id(event.stream)
        if peer_id is None:
            return Applied.DUPLICATE
        current = self._records.get(peer_id) or PeerRecord(peer_id=peer_id)
        if event.seq <= current.version:
            return Applied.DUPLICATE
        if strict and event.seq != current.version + 1:
            return Applied.GAP
        self._records[peer_id] = apply(current, event)
        self.position = max(self.position, event.position)
        self._dirty.add(peer_id)
        return Applied.APPLIED

    def put(self, record: PeerRecord) -> None:
        """Keep ``record``, folded elsewhere (the repository), unless it is not newer."""
        current = self._records.get(record.peer_id)
        if current is not None and current.version >= record.version:
            return
        self._records[record.peer_id] = record
        self.position = max(self.position, record.position)
        self._dirty.add(record.peer_id)

    def take_dirty(self) -> list[PeerRecord]:
        """The records changed since the last call (and forget that they were)."""
        dirty, self._dirty = self._dirty, set()
        return [self._records[p] for p in dirty if p in self._records]

    def mark_dirty(self, records: Iterable[PeerRecord]) -> None:
        """Put records back for the next flush (a write failed)."""
        self._dirty.update(r.peer_id for r in records)

    def replace_with(self, other: PeerDirectory) -> None:
        """Take ``other``'s records and position (after a replay)."""
        self._records = dict(other._records)
        self.position = other.position
        self._dirty = set()

    def records(self) -> Iterator[PeerRecord]:
        """Every record."""
        return iter(list(self._records.values()))

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, peer_id: object) -> bool:
        return peer_id in self._records


@dataclass(frozen=True)
class Rebuilt:
    """What a replay did."""

    peers: int
    events: int
    position: int
    took_s: float


async def catch_up(event_log: LogPort, directory: PeerDirectory) -> int:
    """Fold the peer events appended after the directory's position; returns how many."""
    folded = 0
    after = directory.position
    async for event in event_log.read_all(after_position=after, types=PEER_EVENT_TYPES):
        directory.apply(event, strict=False)
        folded += 1
    return folded


async def rebuild(event_log: LogPort, store: ReadModel) -> tuple[PeerDirectory, Rebuilt]:
    """Replay: a directory folded from the whole log, stored in place of the old one."""
    started = time.perf_counter()
    fresh = PeerDirectory()
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
        directory: PeerDirectory,
        store: ReadModel,
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
