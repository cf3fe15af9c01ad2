"""The event log in memory, for one process: the simulation and unit tests.

:class:`MemoryEventLog` answers what :class:`~.log.EventLog` answers, with the same
errors, so the services' own use cases run on it unchanged: appends with an expected
version, stream and log reads, append listeners. There is no broker behind it, so
nothing waits in an outbox. The contract suite (``libs/common/tests/eventlog_contract.py``)
runs against both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence

from peertrain.common.clock import Clock
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.metrics import APPEND_CONFLICTS

from .log import AppendListener, ConcurrencyError, refuse_unstorable

__all__ = ["MemoryEventLog"]


class MemoryEventLog:
    """The event log, in memory: streams with optimistic concurrency, global positions.

    An append must come right after the stream's last event: a position taken, or one
    past the end, raises :class:`ConcurrencyError`. Appending events already stored
    (same ids) answers them as first stored and hands them to the listeners again, as
    the real log does. An append is whole or nothing (the real log may keep the prefix
    of a multi-event append that lost a race halfway). Positions are 1, 2, 3, ...

    Parameters
    ----------
    clock
        Stamps each event's ``occurred_at`` with its time when stored (the
        simulation's virtual clock, so times measured on the log are virtual);
        ``None`` keeps the time its producer gave it.

    Attributes
    ----------
    streams
        Each stream's events, by ``seq``.
    events
        Every event, in position order (``position`` is its index + 1).
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock
        self.streams: dict[str, list[RecordedEvent]] = {}
        self.events: list[RecordedEvent] = []
        self._by_id: dict[str, RecordedEvent] = {}
        self._listeners: list[AppendListener] = []

    async def ensure_indexes(self) -> None:
        """Nothing to index in memory."""

    def on_append(self, listener: AppendListener) -> Callable[[], None]:
        """Call ``listener`` with the events of every append; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def observed(self, event: RecordedEvent) -> None:
        """Positions are handed out here alone: another process's event teaches nothing."""

    def _appended(self, recorded: list[RecordedEvent]) -> None:
        for listener in list(self._listeners):
            listener(recorded)

    async def append(
        self, stream: str, events: Sequence[NewEvent], *, expected_version: int
    ) -> list[RecordedEvent]:
        """Append ``events`` to ``stream`` right after ``expected_version``.

        Returns
        -------
        list of RecordedEvent
            The events as stored (for an idempotent re-append: as first stored).

        Raises
        ------
        ConcurrencyError
            If the stream is not at ``expected_version``.
        ValidationFailed
            If ``stream`` or an event holds a NUL character (nothing is written).
        """
        if not events:
            return []
        if expected_version < 0:
            raise ValueError("expected_version must be >= 0")
        refuse_unstorable(stream, events)
        stored = [self._by_id.get(e.id) for e in events]
        again = [r for r in stored if r is not None]
        if len(again) == len(events):  # a retried append: make sure it reaches the bus
            self._appended(again)
            return again
        if again or len(self.streams.get(stream, ())) != expected_version:
            APPEND_CONFLICTS.labels(producer=events[0].producer).inc()
            raise ConcurrencyError(stream, expected_version)
        recorded = self._store(stream, events)
        self._appended(recorded)
        return recorded

    def _store(self, stream: str, events: Sequence[NewEvent]) -> list[RecordedEvent]:
        """Record ``events`` at the end of ``stream``, no questions asked (subclasses
        in tests use it as another writer that got there first)."""
        taken = self.streams.setdefault(stream, [])
        recorded = []
        for e in events:
            r = e.stored_as(stream, len(taken) + 1, len(self.events) + 1)
            if self.clock is not None:
                r = r.model_copy(update={"occurred_at": self.clock.now()})
            taken.append(r)
            self.events.append(r)
            self._by_id[r.id] = r
            recorded.append(r)
        return recorded

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        """All events of ``stream`` with ``seq`` > ``after_seq``, in order."""
        return self.streams.get(stream, [])[max(after_seq, 0) :]

    async def stream_version(self, stream: str) -> int:
        """The ``seq`` of the last event of ``stream`` (0 if it has none)."""
        return len(self.streams.get(stream, ()))

    async def read_all(
        self, *, after_position: int = 0, types: Sequence[str] | None = None
    ) -> AsyncIterator[RecordedEvent]:
        """Every event after ``after_position`` in position order (optionally of ``types``)."""
        wanted = None if types is None else set(types)
        for event in self.events[max(after_position, 0) :]:
            if wanted is None or event.type in wanted:
                yield event

    async def find_by_correlation(self, correlation_id: str) -> list[RecordedEvent]:
        """Every event that belongs to one job or request, in position order."""
        return [e for e in self.events if e.correlation_id == correlation_id]

    async def count_unpublished(self, *, producer: str | None = None) -> int:
        """Nothing waits for a broker here."""
        return 0
