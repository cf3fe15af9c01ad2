"""Where a repository keeps the states it folded: by stream, bounded, least recent out.

A service whose read model already holds every aggregate (the registry's directory, the
orchestrator's jobs) hands the repository an adapter over it instead (any object with
the :class:`StateCache` methods), so that there is one copy of each state.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

__all__ = ["Cached", "LruCache", "StateCache"]

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Cached(Generic[S]):
    """One stream's folded state.

    Attributes
    ----------
    state
        The fold of the stream's events up to ``version``.
    version
        The ``seq`` of the last event folded.
    stale
        The log may hold more than ``version`` (an event was missed, or an append
        conflicted): the next load reads the events after ``version`` first.
    """

    state: S
    version: int
    stale: bool = False


class StateCache(Protocol[S]):
    """What a repository needs from its cache."""

    def get(self, stream: str) -> Cached[S] | None:
        """The entry of ``stream``, if there is one."""
        ...

    def put(self, stream: str, entry: Cached[S]) -> None:
        """Keep ``entry`` as the state of ``stream``."""
        ...

    def discard(self, stream: str) -> None:
        """Stop trusting the entry of ``stream`` (drop it, or mark it stale)."""
        ...


class LruCache(Generic[S]):
    """At most ``max_size`` streams; reading or writing one makes it the most recent.

    Parameters
    ----------
    max_size
        How many streams to keep; the least recently used goes when one more comes.
    """

    def __init__(self, max_size: int = 1024) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self.max_size = max_size
        self._entries: OrderedDict[str, Cached[S]] = OrderedDict()

    def get(self, stream: str) -> Cached[S] | None:
        """The entry of ``stream`` (now the most recent), if there is one."""
        entry = self._entries.get(stream)
        if entry is not None:
            self._entries.move_to_end(stream)
        return entry

    def put(self, stream: str, entry: Cached[S]) -> None:
        """Keep ``entry``; the least recently used stream goes if there are too many."""
        self._entries[stream] = entry
        self._entries.move_to_end(stream)
        while len(self._entries) > self.max_size:
            self._entries.popitem(last=False)

    def discard(self, stream: str) -> None:
        """Forget ``stream``."""
        self._entries.pop(stream, None)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, stream: object) -> bool:
        return stream in self._entries
