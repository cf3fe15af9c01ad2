"""An in-memory stand-in for the event log's stream reads and appends (unit tests)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from peertrain.common.eventlog import ConcurrencyError
from peertrain.common.events import NewEvent, RecordedEvent


class MemoryLog:
    """``read_stream`` and ``append`` as :class:`EventLog` answers them, in memory.

    An append at a taken position raises :class:`ConcurrencyError`; appending events
    that are stored already (same ids) answers them as stored. Every call yields to the
    event loop once, like real I/O. ``before_append`` runs just before an append lands
    (a concurrent writer getting there first). ``reads`` lists each read as
    ``(stream, after_seq)``.
    """

    def __init__(self) -> None:
        self.streams: dict[str, list[RecordedEvent]] = {}
        self.reads: list[tuple[str, int]] = []
        self.appends: list[tuple[str, int]] = []
        self.before_append: Callable[[str], None] | None = None
        self._position = 0

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        self.reads.append((stream, after_seq))
        found = [e for e in self.streams.get(stream, []) if e.seq > after_seq]
        await asyncio.sleep(0)  # the answer is what the log held when asked
        return found

    async def append(
        self, stream: str, events: Sequence[NewEvent], *, expected_version: int
    ) -> list[RecordedEvent]:
        await asyncio.sleep(0)
        hook, self.before_append = self.before_append, None
        if hook is not None:
            hook(stream)
        self.appends.append((stream, expected_version))
        stored = {e.id: e for s in self.streams.values() for e in s}
        if events and all(e.id in stored for e in events):
            return [stored[e.id] for e in events]  # a retried append: what it stored
        taken = self.streams.setdefault(stream, [])
        if len(taken) != expected_version:
            raise ConcurrencyError(stream, expected_version)
        return self.write(stream, events)

    def write(self, stream: str, events: Sequence[NewEvent]) -> list[RecordedEvent]:
        """Store ``events`` at the end of ``stream`` at once (another writer)."""
        taken = self.streams.setdefault(stream, [])
        recorded = []
        for e in events:
            self._position += 1
            recorded.append(
                RecordedEvent(
                    **e.model_dump(exclude={"data"}),
                    data=e.data,
                    stream=stream,
                    seq=len(taken) + 1,
                    position=self._position,
                )
            )
            taken.append(recorded[-1])
        return recorded


@pytest.fixture
def memory_log() -> MemoryLog:
    """A fresh in-memory log."""
    return MemoryLog()
