"""One aggregate repository: load a stream, fold it, decide, append, retry on conflict.

Modelled on eventsourcing's ``Repository`` and ``Application.save``. Every service
loads, decides and appends through a :class:`Repository`, so optimistic concurrency is
handled here and nowhere else:

- :meth:`Repository.execute` decides on the loaded state with a pure ``decide``,
  appends at that state's version, and on :class:`ConcurrencyError` reads what the
  other writer appended and decides again, a bounded number of times.
- :meth:`Repository.save` appends a decision taken outside (on a :class:`Loaded` the
  caller holds) at that state's version, and raises on a conflict.
- Successful appends are folded into the cache from the recorded events (no re-read).

Loading, caching and observing the bus are :class:`~.loader.Loader`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import structlog

from peertrain.common.events import EventData, NewEvent, RecordedEvent

from .cache import Cached, StateCache
from .fold import Fold, Loaded, Saved
from .loader import Loader, StreamStore
from .log import ConcurrencyError

__all__ = ["Decide", "Repository"]

log = structlog.get_logger(__name__)

S = TypeVar("S")

Decision = Sequence[EventData | NewEvent]
Decide = Callable[[S], Decision]
"""A pure decision on a state: the events to append (payloads or whole events; empty:
nothing to do). It may raise a domain error, which :meth:`Repository.execute` lets
through."""


class Repository(Loader[S]):
    """Load, decide and append for the streams of one kind of aggregate.

    Parameters
    ----------
    log
        The event log (anything with its ``read_stream`` and ``append``).
    fold
        How a stream becomes a state.
    producer
        ``producer`` of the events built from payloads.
    cache
        Where states are kept; default an :class:`LruCache` of ``cache_size`` streams.
    retries
        How often :meth:`execute` decides again after a conflict, unless told otherwise.
    """

    def __init__(
        self,
        log: StreamStore,
        fold: Fold[S],
        *,
        producer: str,
        cache: StateCache[S] | None = None,
        cache_size: int = 1024,
        retries: int = 3,
    ) -> None:
        super().__init__(log, fold, cache=cache, cache_size=cache_size)
        self.producer = producer
        self.retries = retries

    # -- writing ----------------------------------------------------------------------

    async def save(
        self,
        loaded: Loaded[S],
        events: Decision,
        *,
        actor: str | None = None,
        correlation_id: str | None = None,
        causation: RecordedEvent | None = None,
    ) -> Saved[S]:
        """Append events decided on ``loaded`` at its version, and fold them in.

        Raises
        ------
        ConcurrencyError
            If the stream moved past ``loaded.version``: the cached state is marked
            stale (the next load reads on), and the caller decides again.
        """
        async with self._lock(loaded.stream):
            return await self._save(loaded, events, actor, correlation_id, causation)

    async def execute(
        self,
        stream: str,
        decide: Decide[S],
        *,
        retries: int | None = None,
        refresh: bool = False,
        new: bool = False,
        actor: str | None = None,
        correlation_id: str | None = None,
        causation: RecordedEvent | None = None,
    ) -> Saved[S]:
        """Decide on the current state of ``stream`` and append the answer.

        Parameters
        ----------
        stream
            The stream to append to.
        decide
            The decision, given the state; called again on the caught-up state after a
            conflict.
        retries
            How often to decide again after a conflict (default: the repository's).
        refresh
            Read what followed the cached version before deciding.
        new
            The stream is expected to be empty (a fresh id): if it is not cached, decide
            on the initial state without reading (a conflict reads it).
        actor, correlation_id, causation
            Envelope of the events built from payloads.

        Raises
        ------
        ConcurrencyError
            If the stream still moved after the last retry.
        """
        attempts = 1 + (self.retries if retries is None else retries)
        async with self._lock(stream):
            loaded = await self._load(stream, refresh=refresh, new=new)
            for attempt in range(attempts):
                decided = decide(loaded.state)
                if not decided:
                    return Saved((), loaded)
                try:
                    return await self._save(loaded, decided, actor, correlation_id, causation)
                except ConcurrencyError:
                    if attempt + 1 == attempts:
                        raise
                    log.info("stream moved under us; deciding again", stream=stream)
                    loaded = await self._refresh(loaded)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _save(
        self,
        loaded: Loaded[S],
        events: Decision,
        actor: str | None,
        correlation_id: str | None,
        causation: RecordedEvent | None,
    ) -> Saved[S]:
        new = [
            e
            if isinstance(e, NewEvent)
            else NewEvent.of(
                e,
                producer=self.producer,
                actor=actor,
                correlation_id=correlation_id,
                causation=causation,
            )
            for e in events
        ]
        if not new:
            return Saved((), loaded)
        stream = loaded.stream
        try:
            recorded = await self.log.append(stream, new, expected_version=loaded.version)
        except ConcurrencyError:
            entry = self.cache.get(stream)
            if entry is not None:
                self.cache.put(stream, Cached(entry.state, entry.version, stale=True))
            raise
        after, whole = self._fold(loaded, recorded)
        current = self.cache.get(stream)
        if current is None or current.version <= after.version:
            self.cache.put(stream, Cached(after.state, after.version, stale=not whole))
        return Saved(tuple(recorded), after)
