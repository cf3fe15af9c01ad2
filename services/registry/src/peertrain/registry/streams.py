"""Appending to peer streams: load, decide, append with the expected version, retry.

Every change the registry makes to a peer goes through :meth:`PeerStreams.execute`
with a *decide* function (see :mod:`.domain.peer`): the decision is taken on the
record as the log has it, appended at that record's version, and retried after
catching up if someone else appended first. Appended events are folded into the
directory at once, so a read right after a write sees it.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable

import structlog

from peertrain.common.eventlog import ConcurrencyError, EventLog
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.peers import peer_stream

from .directory import Applied, Directory
from .domain.peer import PeerRecord

__all__ = ["Decide", "PeerStreams"]

log = structlog.get_logger(__name__)

Decide = Callable[[PeerRecord], list[EventData]]

_LOCKS = 256
_ATTEMPTS = 5


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

    def __init__(self, log: EventLog, directory: Directory, *, producer: str) -> None:
        self.log = log
        self.directory = directory
        self.producer = producer
        self._locks = [asyncio.Lock() for _ in range(_LOCKS)]

    def _lock(self, peer_id: str) -> asyncio.Lock:
        return self._locks[zlib.crc32(peer_id.encode()) % _LOCKS]

    async def catch_up(self, peer_id: str) -> PeerRecord:
        """Fold whatever the log holds beyond what the directory knows of ``peer_id``."""
        known = self.directory.get(peer_id)
        after = known.version if known else 0
        for event in await self.log.read_stream(peer_stream(peer_id), after_seq=after):
            self.directory.apply(event, strict=False)
        return self.directory.get(peer_id) or PeerRecord(peer_id=peer_id)

    async def observe(self, event: RecordedEvent) -> None:
        """An event seen on the bus: fold it, reading the stream first if it is ahead."""
        if self.directory.apply(event) is Applied.GAP:
            peer_id = event.stream.partition(":")[2]
            async with self._lock(peer_id):
                await self.catch_up(peer_id)

    async def record(self, peer_id: str) -> PeerRecord:
        """The peer as the log has it (reading its stream if the directory lacks it)."""
        known = self.directory.get(peer_id)
        if known is not None:
            return known
        async with self._lock(peer_id):
            return await self.catch_up(peer_id)

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
        """
        async with self._lock(peer_id):
            record = self.directory.get(peer_id) or await self.catch_up(peer_id)
            for _ in range(_ATTEMPTS):
                if not record.enrolled:
                    log.warning("ignoring a peer the log does not know", peer_id=peer_id)
                    return []
                decided = decide(record)
                if not decided:
                    return []
                new = [
                    NewEvent.of(
                        d,
                        producer=self.producer,
                        actor=actor,
                        correlation_id=correlation_id,
                        causation=causation,
                    )
                    for d in decided
                ]
                try:
                    recorded = await self.log.append(
                        peer_stream(peer_id), new, expected_version=record.version
                    )
                except ConcurrencyError:
                    record = await self.catch_up(peer_id)
                    continue
                for event in recorded:
                    self.directory.apply(event, strict=False)
                return recorded
            raise ConcurrencyError(peer_stream(peer_id), record.version)
