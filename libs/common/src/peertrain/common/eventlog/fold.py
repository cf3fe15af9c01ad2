"""What a repository folds and what it hands back.

A :class:`Fold` says how one stream becomes a state: the state of an empty stream and a
pure ``apply(state, event) -> state``. :class:`Loaded` is a state with the stream
version it was folded to (the expected version of the next append); :class:`Saved` is
what an append left: the events as stored and the state after them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from peertrain.common.events import RecordedEvent

__all__ = ["VERSION_ONLY", "Fold", "Loaded", "Saved"]

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Fold(Generic[S]):
    """How the events of a stream become a state.

    Parameters
    ----------
    initial
        The state of an empty stream, given the stream's name (``peer:<id>`` -> an
        empty record of that peer).
    apply
        Fold one recorded event into a state (pure; called in ``seq`` order). A state
        may be a mutable object that ``apply`` changes and returns; the repository then
        keeps that one object current.
    streams
        The streams a first load reads, in order, for an aggregate that also folds
        other streams than its own (the orchestrator's job folds its model and sharding
        streams). Default: the stream alone. Only the stream's own events count for its
        version.
    folded
        For a fold of several streams: how far a state has folded one of its other
        source streams (the ``seq`` to read on after), or ``None`` when it needs nothing
        more of it. Reading on (after a conflict, or a stale entry) then reads every
        source from there and folds them all in log order, as a first load does: a fold
        may depend on that order (an update accepted before its round closed). Without
        it, reading on reads the own stream alone.
    """

    initial: Callable[[str], S]
    apply: Callable[[S, RecordedEvent], S]
    streams: Callable[[str], Sequence[str]] | None = None
    folded: Callable[[S, str], int | None] | None = None

    def sources(self, stream: str) -> Sequence[str]:
        """The streams to read for a first load of ``stream``."""
        return (stream,) if self.streams is None else self.streams(stream)

    def read_on(self, loaded: Loaded[S]) -> list[tuple[str, int]]:
        """The streams to read on from for ``loaded``, each with the ``seq`` to read
        after: its own stream from its version, the others from where ``folded`` says."""
        on = [(loaded.stream, loaded.version)]
        if self.folded is None:
            return on
        for source in self.sources(loaded.stream):
            after = None if source == loaded.stream else self.folded(loaded.state, source)
            if after is not None:
                on.append((source, after))
        return on


def _seq(_version: int, event: RecordedEvent) -> int:
    return event.seq


VERSION_ONLY: Fold[int] = Fold(initial=lambda _stream: 0, apply=_seq)
"""For streams a service appends to without deciding on their content: the state is the
stream's version."""


@dataclass(frozen=True, slots=True)
class Loaded(Generic[S]):
    """A stream's state, folded up to ``version``.

    Attributes
    ----------
    stream
        The stream's name.
    state
        The fold of its events up to ``version``.
    version
        The ``seq`` of the last event folded (0: none): the expected version of the next
        append decided on ``state``.
    """

    stream: str
    state: S
    version: int


@dataclass(frozen=True, slots=True)
class Saved(Generic[S]):
    """What an append (or a decision to append nothing) left.

    Attributes
    ----------
    events
        The events as the log stored them; empty when the decision was to do nothing.
    loaded
        The state after them.
    """

    events: tuple[RecordedEvent, ...]
    loaded: Loaded[S]

    @property
    def state(self) -> S:
        """The state after the events."""
        return self.loaded.state

    @property
    def version(self) -> int:
        """The stream's version after the events."""
        return self.loaded.version
