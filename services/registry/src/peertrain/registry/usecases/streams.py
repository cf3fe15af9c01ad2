"""Appending to peer streams, through the aggregate repository.

Every change the registry makes to a peer goes through :meth:`PeerStreams.execute`
with a *decide* function (see :mod:`peertrain.registry.domain.peer`): the repository
decides on the record as the log has it, appends at that record's version, and
decides again after catching up if someone else appended first. The directory is the
repository's cache (:class:`PeerDirectoryCache`), so appended events are folded into the
read model at once and a read right after a write sees it.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from peertrain.common.eventlog import (
    Cached,
    Fold,
    LogPort,
    Observed,
    Repository,
)
from peertrain.common.events import EventData, RecordedEvent
from peertrain.common.events.peers import peer_stream
from peertrain.registry.directory import PeerDirectory
from peertrain.registry.domain.peer import PeerRecord, apply

__all__ = ["PEER_FOLD", "Decide", "PeerDirectoryCache", "PeerStreams"]

log = structlog.get_logger(__name__)

Decide = Callable[[PeerRecord], list[EventData]]

PEER_FOLD: Fold[PeerRecord] = Fold(
    initial=lambda stream: PeerRecord(peer_id=stream.partition(":")[2]), apply=apply
)
"""A ``peer:<id>`` stream folded into its :class:`PeerRecord`."""

_ATTEMPTS = 5


class PeerDirectoryCache:
    """The directory as the repository's cache: one copy of every peer record.

    A record is never dropped from here (the directory is the read model): an entry the
    repository stops trusting is marked stale instead, and read on at the next load.
    Streams with nothing in them are not added.
    """

    def __init__(self, directory: PeerDirectory) -> None:
        self.directory = directory
        self._stale: set[str] = set()

    def get(self, stream: str) -> Cached[PeerRecord] | None:
        """The peer's record, if the directory has one."""
        record = self.directory.get(stream.partition(":")[2])
        if record is None:
            return None
        return Cached(record, record.version, stale=stream in self._stale)

    def put(self, stream: str, entry: Cached[PeerRecord]) -> None:
        """Keep the record in the directory (never an older one)."""
        if entry.version == 0:
            return
        if entry.stale:
            self._stale.add(stream)
        else:
            self._stale.discard(stream)
        self.directory.put(entry.state)

    def discard(self, stream: str) -> None:
        """Mark the record stale (it stays in the read model)."""
        self._stale.add(stream)


class PeerStreams:
    """The registry's writer for ``peer:<id>`` streams.

    Parameters
    ----------
    log
        The shared event log.
    directory
        The in-memory read model, kept in step with every append.
    producer
        The ``producer`` of appended events (the service name).
    """

    def __init__(self, log: LogPort, directory: PeerDirectory, *, producer: str) -> None:
        self.directory = directory
        self.repository: Repository[PeerRecord] = Repository(
            log,
            PEER_FOLD,
            producer=producer,
            cache=PeerDirectoryCache(directory),
            retries=_ATTEMPTS - 1,
        )

    async def observe(self, event: RecordedEvent) -> None:
        """An event seen on the bus: fold it, reading the stream first if it is ahead."""
        if self.repository.observe(event) in (Observed.GAP, Observed.UNKNOWN):
            await self.repository.load(event.stream, refresh=True)

    async def record(self, peer_id: str) -> PeerRecord:
        """The peer as the log has it (reading its stream if the directory lacks it)."""
        return (await self.repository.load(peer_stream(peer_id))).state

    async def execute(
        self,
        peer_id: str,
        decide: Decide,
        *,
        actor: str | None = None,
        correlation_id: str | None = None,
        causation: RecordedEvent | None = None,
    ) -> list[RecordedEvent]:
        """Decide on the current record and append the answer; ``[]`` if nothing to do.

        Peers the log does not know (no ``peer.enrolled``) are never written to.

        Raises
        ------
        ConcurrencyError
            If the stream kept moving through every attempt.
        """

        def known(record: PeerRecord) -> list[EventData]:
            if not record.enrolled:
                log.warning("ignoring a peer the log does not know", peer_id=peer_id)
                return []
            return decide(record)

        saved = await self.repository.execute(
            peer_stream(peer_id),
            known,
            actor=actor,
            correlation_id=correlation_id,
            causation=causation,
        )
        return list(saved.events)
