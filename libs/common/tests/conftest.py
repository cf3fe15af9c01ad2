"""The event log in memory, as the repository's unit tests watch it: every read and
append recorded, a hook for another writer that gets there first."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events import NewEvent, RecordedEvent

sys.path.insert(0, str(Path(__file__).parent))  # the contract suites, for tests/stack too


class MemoryLog(MemoryEventLog):
    """:class:`MemoryEventLog` that records what it is asked and yields like real I/O.

    Every read and append yields to the event loop once, as a real call would.
    ``before_append`` runs once, just before the next append lands (a concurrent writer
    getting there first). ``reads`` lists each stream read as ``(stream, after_seq)``,
    ``appends`` each append as ``(stream, expected_version)``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[str, int]] = []
        self.appends: list[tuple[str, int]] = []
        self.before_append: Callable[[str], None] | None = None

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        self.reads.append((stream, after_seq))
        found = await super().read_stream(stream, after_seq=after_seq)
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
        return await super().append(stream, events, expected_version=expected_version)

    def write(self, stream: str, events: Sequence[NewEvent]) -> list[RecordedEvent]:
        """Store ``events`` at the end of ``stream`` at once (another writer)."""
        return self._store(stream, events)


@pytest.fixture
def memory_log() -> MemoryLog:
    """A fresh in-memory log."""
    return MemoryLog()
