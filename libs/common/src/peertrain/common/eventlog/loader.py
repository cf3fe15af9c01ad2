"""The read side of a repository: states by stream, folded from the log and kept current.

:meth:`Loader.load` answers from the cache; a stream not cached is read once
(:meth:`EventLog.read_stream`), a stale one only after the version it has.
:meth:`Loader.observe` folds an event that arrived from the bus into its cached stream
(or into a cached state that folds its stream as another source) when it is the next
one, and marks the entry stale when one is missing, so services keep their states
current from the bus without reading the log.
"""

from __future__ import annotations

import asyncio
import heapq
import zlib
from collections.abc import Sequence
from enum import Enum
from typing import Generic, Protocol, TypeVar

from peertrain.common.events import NewEvent, RecordedEvent

from .cache import Cached, LruCache, StateCache
from .fold import Fold, Loaded

__all__ = ["Loader", "Observed", "StreamStore"]

S = TypeVar("S")

_LOCKS = 256


class StreamStore(Protocol):
    """The part of :class:`~.log.EventLog` a repository uses."""

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        """Every event of ``stream`` after ``after_seq``, in ``seq`` order."""
        ...

    async def append(
        self, stream: str, events: Sequence[NewEvent], *, expected_version: int
    ) -> list[RecordedEvent]:
        """Append right after ``expected_version``, or raise ``ConcurrencyError``."""
        ...


class Observed(Enum):
    """What :meth:`Loader.observe` did with an event."""

    APPLIED = "applied"
    DUPLICATE = "duplicate"
    GAP = "gap"
    """The event is ahead of the cached version: the entry is stale until a load."""
    UNKNOWN = "unknown"
    """The stream is not cached: nothing to keep current."""


class Loader(Generic[S]):
    """Folded states of one kind of stream, cached, read from the log when needed.

    Parameters
    ----------
    log
        The event log (anything with its ``read_stream`` and ``append``).
    fold
        How a stream becomes a state.
    cache
        Where states are kept; default an :class:`LruCache` of ``cache_size`` streams.

    Operations on one stream are serialised in this process (striped locks).
    """

    def __init__(
        self,
        log: StreamStore,
        fold: Fold[S],
        *,
        cache: StateCache[S] | None = None,
        cache_size: int = 1024,
    ) -> None:
        self.log = log
        self.fold = fold
        self.cache: StateCache[S] = cache if cache is not None else LruCache(cache_size)
        self._locks = [asyncio.Lock() for _ in range(_LOCKS)]

    def _lock(self, stream: str) -> asyncio.Lock:
        return self._locks[zlib.crc32(stream.encode()) % _LOCKS]

    # -- reading ----------------------------------------------------------------------

    def new(self, stream: str) -> Loaded[S]:
        """The state of an empty stream (for a fresh id: nothing is read)."""
        return Loaded(stream, self.fold.initial(stream), 0)

    def cached(self, stream: str) -> Loaded[S] | None:
        """The cached state of ``stream`` as it is (no I/O), if there is one."""
        entry = self.cache.get(stream)
        return None if entry is None else Loaded(stream, entry.state, entry.version)

    async def load(self, stream: str, *, refresh: bool = False) -> Loaded[S]:
        """The state of ``stream``: cached, or read; ``refresh`` reads what followed."""
        async with self._lock(stream):
            return await self._load(stream, refresh=refresh, new=False)

    async def read(self, stream: str) -> Loaded[S]:
        """The state folded afresh from the log; the cache is neither used nor changed."""
        state, version, _, _ = await self._read_all(stream)
        return Loaded(stream, state, version)

    def observe(self, event: RecordedEvent, *, into: str | None = None) -> Observed:
        """Fold an event from the bus into its cached stream if it is the next one.

        ``into`` names the cached state instead when it folds ``event``'s stream as one
        of its other sources (:attr:`Fold.streams`: the aggregator's ``model:<id>``
        folds ``job:<id>``): the event is the next one when it follows what that state
        has folded of its stream (:attr:`Fold.folded`), and the state's own version does
        not move.
        """
        stream = into or event.stream
        entry = self.cache.get(stream)
        if entry is None:
            return Observed.UNKNOWN
        if stream == event.stream:
            after: int | None = entry.version
        elif self.fold.folded is None or event.stream not in self.fold.sources(stream):
            return Observed.UNKNOWN
        else:
            after = self.fold.folded(entry.state, event.stream)
        if after is None or event.seq <= after:
            return Observed.DUPLICATE
        if event.seq != after + 1:
            self.cache.put(stream, Cached(entry.state, entry.version, stale=True))
            return Observed.GAP
        state = self.fold.apply(entry.state, event)
        version = event.seq if stream == event.stream else entry.version
        self.cache.put(stream, Cached(state, version, entry.stale))
        return Observed.APPLIED

    def forget(self, stream: str) -> None:
        """Drop the cached state of ``stream`` (it is in the log)."""
        self.cache.discard(stream)

    async def _load(self, stream: str, *, refresh: bool, new: bool) -> Loaded[S]:
        entry = self.cache.get(stream)
        if entry is None:
            return self.new(stream) if new else await self._first(stream)
        loaded = Loaded(stream, entry.state, entry.version)
        return await self._refresh(loaded) if refresh or entry.stale else loaded

    async def _read_all(self, stream: str) -> tuple[S, int, list[RecordedEvent], bool]:
        """The fold of every source stream; the own events; whether any event was read.

        The sources' events are folded in log order (by position), as the bus delivers
        them: a fold may depend on it (an update accepted before its round closed).
        """
        state, version, own, found = self.fold.initial(stream), 0, [], False
        sources = [await self.log.read_stream(source) for source in self.fold.sources(stream)]
        for event in heapq.merge(*sources, key=_position):
            state, found = self.fold.apply(state, event), True
            if event.stream == stream:
                version = event.seq
                own.append(event)
        return state, version, own, found

    async def _first(self, stream: str) -> Loaded[S]:
        state, version, own, found = await self._read_all(stream)
        current = self.cache.get(stream)
        if current is not None:  # filled while we read: keep that one, and catch it up
            return self._merge(Loaded(stream, current.state, current.version), own)
        if found:  # a stream with nothing is not kept: an empty entry would only take room
            self.cache.put(stream, Cached(state, version))
        return Loaded(stream, state, version)

    async def unfolded(self, loaded: Loaded[S]) -> list[RecordedEvent]:
        """What the log holds past ``loaded``, across its source streams (see
        :attr:`Fold.folded`), in log order (by position)."""
        reads = [
            await self.log.read_stream(source, after_seq=after)
            for source, after in self.fold.read_on(loaded)
        ]
        return reads[0] if len(reads) == 1 else list(heapq.merge(*reads, key=_position))

    async def _refresh(self, loaded: Loaded[S]) -> Loaded[S]:
        return self._merge(loaded, await self.unfolded(loaded))

    def _merge(self, basis: Loaded[S], events: Sequence[RecordedEvent]) -> Loaded[S]:
        """Fold events read from the log onto the freshest of ``basis`` and the cached
        entry (the bus may have moved it while we read), and keep the result."""
        stream = basis.stream
        current = self.cache.get(stream)
        if current is not None and current.version > basis.version:
            basis = Loaded(stream, current.state, current.version)
        loaded, whole = self._fold(basis, events)
        self.cache.put(stream, Cached(loaded.state, loaded.version, stale=not whole))
        return loaded

    def _fold(self, basis: Loaded[S], events: Sequence[RecordedEvent]) -> tuple[Loaded[S], bool]:
        """``basis`` with the events that follow it; ``False`` if one was missing."""
        state, version = basis.state, basis.version
        for event in events:
            if event.stream != basis.stream:  # another source: its fold skips what it has
                state = self.fold.apply(state, event)
                continue
            if event.seq <= version:
                continue  # already folded (an idempotent re-append answers what it stored)
            if event.seq != version + 1:
                return Loaded(basis.stream, state, version), False
            state, version = self.fold.apply(state, event), event.seq
        return Loaded(basis.stream, state, version), True


def _position(event: RecordedEvent) -> int:
    return event.position
