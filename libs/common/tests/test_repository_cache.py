"""The aggregate repository's reads: the cache, the bus, the bound, other folds."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from peertrain.common.eventlog import (
    VERSION_ONLY,
    Cached,
    Fold,
    Loaded,
    LruCache,
    Observed,
    Repository,
)
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.diagnostics import DiagnosticPinged

Notes = tuple[str, ...]


def _note(notes: Notes, event: RecordedEvent) -> Notes:
    assert isinstance(event.data, DiagnosticPinged)
    return (*notes, event.data.note)


NOTES: Fold[Notes] = Fold(initial=lambda _stream: (), apply=_note)


def ping(note: str) -> NewEvent:
    return NewEvent.of(DiagnosticPinged(note=note), producer="other")


def repository(log: Any, **options: Any) -> Repository[Notes]:
    return Repository(log, NOTES, producer="test", **options)


async def test_a_stream_is_read_once_then_served_from_the_cache(memory_log: Any) -> None:
    memory_log.write("s:1", [ping("a"), ping("b")])
    repo = repository(memory_log)
    assert await repo.load("s:1") == Loaded("s:1", ("a", "b"), 2)
    assert await repo.load("s:1") == Loaded("s:1", ("a", "b"), 2)
    assert memory_log.reads == [("s:1", 0)]


async def test_an_empty_stream_is_not_kept(memory_log: Any) -> None:
    repo = repository(memory_log)
    assert await repo.load("s:none") == Loaded("s:none", (), 0)
    assert repo.cached("s:none") is None


async def test_events_from_the_bus_in_order_keep_the_state_current(memory_log: Any) -> None:
    memory_log.write("s:1", [ping("a")])
    repo = repository(memory_log)
    await repo.load("s:1")
    (b,) = memory_log.write("s:1", [ping("b")])
    assert repo.observe(b) is Observed.APPLIED
    assert repo.observe(b) is Observed.DUPLICATE
    assert await repo.load("s:1") == Loaded("s:1", ("a", "b"), 2)
    assert memory_log.reads == [("s:1", 0)]


async def test_an_event_ahead_marks_the_state_stale_and_the_next_load_reads_on(
    memory_log: Any,
) -> None:
    memory_log.write("s:1", [ping("a")])
    repo = repository(memory_log)
    await repo.load("s:1")
    _, c = memory_log.write("s:1", [ping("b"), ping("c")])
    assert repo.observe(c) is Observed.GAP
    assert repo.cached("s:1") == Loaded("s:1", ("a",), 1)  # nothing folded out of order
    assert await repo.load("s:1") == Loaded("s:1", ("a", "b", "c"), 3)
    assert memory_log.reads == [("s:1", 0), ("s:1", 1)]
    assert await repo.load("s:1") == Loaded("s:1", ("a", "b", "c"), 3)
    assert len(memory_log.reads) == 2  # current again: no more reads


async def test_events_of_streams_not_cached_are_left_to_the_next_load(memory_log: Any) -> None:
    repo = repository(memory_log)
    (a,) = memory_log.write("s:1", [ping("a")])
    assert repo.observe(a) is Observed.UNKNOWN
    assert repo.cached("s:1") is None


async def test_an_event_observed_while_a_stream_is_read_is_kept(memory_log: Any) -> None:
    memory_log.write("s:1", [ping("a")])
    repo = repository(memory_log)
    await repo.load("s:1")
    reading = asyncio.create_task(repo.load("s:1", refresh=True))
    await asyncio.sleep(0)  # the read has its answer (nothing new) and waits
    (b,) = memory_log.write("s:1", [ping("b")])
    assert repo.observe(b) is Observed.APPLIED
    assert await reading == Loaded("s:1", ("a", "b"), 2)
    assert repo.cached("s:1") == Loaded("s:1", ("a", "b"), 2)


async def test_the_cache_keeps_the_most_recently_used_streams(memory_log: Any) -> None:
    for stream in ("s:1", "s:2", "s:3"):
        memory_log.write(stream, [ping(stream)])
    repo = repository(memory_log, cache_size=2)
    await repo.load("s:1")
    await repo.load("s:2")
    await repo.load("s:1")  # s:1 is now the most recent: s:2 goes next
    await repo.load("s:3")
    assert repo.cached("s:2") is None
    assert repo.cached("s:1") is not None and repo.cached("s:3") is not None
    reads = len(memory_log.reads)
    assert await repo.load("s:2") == Loaded("s:2", ("s:2",), 1)
    assert len(memory_log.reads) == reads + 1


def test_an_lru_cache_holds_at_most_its_size() -> None:
    cache: LruCache[int] = LruCache(3)
    for n in range(10):
        cache.put(f"s:{n}", Cached(n, n))
    assert len(cache) == 3 and [f"s:{n}" in cache for n in (6, 7, 8, 9)] == [False] + [True] * 3
    with pytest.raises(ValueError):
        LruCache(0)


async def test_read_folds_afresh_without_the_cache(memory_log: Any) -> None:
    memory_log.write("s:1", [ping("a")])
    repo = repository(memory_log)
    assert await repo.read("s:1") == Loaded("s:1", ("a",), 1)
    assert repo.cached("s:1") is None


async def test_a_first_load_folds_the_other_streams_named_but_versions_its_own(
    memory_log: Any,
) -> None:
    memory_log.write("job:1", [ping("created"), ping("configured")])
    memory_log.write("model:1", [ping("v0")])
    fold = Fold(initial=NOTES.initial, apply=_note, streams=lambda s: (f"job:{s[6:]}", s))
    repo = Repository(memory_log, fold, producer="test")
    assert await repo.load("model:1") == Loaded("model:1", ("created", "configured", "v0"), 1)
    assert memory_log.reads == [("job:1", 0), ("model:1", 0)]


@dataclass
class Seen:
    """A state folded from two streams that knows how far it got in each."""

    notes: list[str] = field(default_factory=list)
    seqs: dict[str, int] = field(default_factory=dict)


def _see(state: Seen, event: RecordedEvent) -> Seen:
    if event.seq <= state.seqs.get(event.stream, 0):
        return state  # folded already
    assert isinstance(event.data, DiagnosticPinged)
    state.notes.append(event.data.note)
    state.seqs[event.stream] = event.seq
    return state


async def test_after_a_conflict_every_source_is_read_on_in_log_order(memory_log: Any) -> None:
    # Another writer's event on the own stream follows one on the other stream that this
    # instance has not folded yet: reading on folds both, in the order the log has them
    # (a round's accepted update before its close), not the own stream's first.
    fold = Fold(
        initial=lambda _s: Seen(),
        apply=_see,
        streams=lambda s: (s, f"model:{s[4:]}"),
        folded=lambda state, source: state.seqs.get(source, 0),
    )
    memory_log.write("job:1", [ping("opened")])
    repo = Repository(memory_log, fold, producer="test")
    assert (await repo.load("job:1")).state.notes == ["opened"]
    memory_log.write("model:1", [ping("accepted")])
    memory_log.write("job:1", [ping("closed")])
    saved = await repo.execute("job:1", lambda _: [DiagnosticPinged(note="reported")])
    assert saved.state.notes == ["opened", "accepted", "closed", "reported"]
    assert saved.state.seqs == {"job:1": 3, "model:1": 1} and saved.loaded.version == 3
    # nothing new: reading on folds nothing twice
    assert (await repo.load("job:1", refresh=True)).state.notes == saved.state.notes


@dataclass
class Counter:
    """A mutable state: ``apply`` changes it in place."""

    notes: list[str] = field(default_factory=list)


def _count(state: Counter, event: RecordedEvent) -> Counter:
    assert isinstance(event.data, DiagnosticPinged)
    state.notes.append(event.data.note)
    return state


async def test_a_mutable_state_is_the_one_object_kept_current(memory_log: Any) -> None:
    repo = Repository(memory_log, Fold(lambda _s: Counter(), _count), producer="test")
    memory_log.write("s:1", [ping("a")])
    first = (await repo.load("s:1")).state
    saved = await repo.execute("s:1", lambda _: [DiagnosticPinged(note="b")])
    assert saved.state is first and first.notes == ["a", "b"]


async def test_the_version_only_fold_decides_on_the_version(memory_log: Any) -> None:
    repo = Repository(memory_log, VERSION_ONLY, producer="test")
    memory_log.write("s:1", [ping("a"), ping("b")])
    saved = await repo.execute("s:1", lambda version: [DiagnosticPinged(n=version)])
    assert saved.version == 3 and saved.events[0].data == DiagnosticPinged(n=2)


class Directory:
    """A read model that is the only copy of its states (a cache adapter)."""

    def __init__(self) -> None:
        self.rows: dict[str, Notes] = {}
        self.versions: dict[str, int] = {}

    def get(self, stream: str) -> Cached[Notes] | None:
        row = self.rows.get(stream)
        return None if row is None else Cached(row, self.versions[stream])

    def put(self, stream: str, entry: Cached[Notes]) -> None:
        self.rows[stream], self.versions[stream] = entry.state, entry.version

    def discard(self, stream: str) -> None:
        self.rows.pop(stream, None)


async def test_a_read_model_can_be_the_cache(memory_log: Any) -> None:
    directory = Directory()
    directory.put("s:1", Cached(("known",), 1))
    memory_log.write("s:1", [ping("known")])
    repo = Repository(memory_log, NOTES, producer="test", cache=directory)
    await repo.execute("s:1", lambda _: [DiagnosticPinged(note="more")])
    assert directory.rows == {"s:1": ("known", "more")} and memory_log.reads == []


async def test_events_of_another_source_are_observed_into_the_state_that_folds_them(
    memory_log: Any,
) -> None:
    fold = Fold(
        initial=lambda _s: Seen(),
        apply=_see,
        streams=lambda s: (s, f"model:{s[4:]}"),
        folded=lambda state, source: state.seqs.get(source, 0),
    )
    memory_log.write("job:1", [ping("opened")])
    repo = Repository(memory_log, fold, producer="test")
    await repo.load("job:1")
    (accepted,) = memory_log.write("model:1", [ping("accepted")])
    assert repo.observe(accepted) is Observed.UNKNOWN  # model:1 is not cached itself
    assert repo.observe(accepted, into="job:1") is Observed.APPLIED
    assert repo.observe(accepted, into="job:1") is Observed.DUPLICATE
    cached = repo.cached("job:1")
    assert cached is not None and cached.version == 1  # its own stream did not move
    assert cached.state.notes == ["opened", "accepted"]
    (other,) = memory_log.write("sharding:1", [ping("sharded")])
    assert repo.observe(other, into="job:1") is Observed.UNKNOWN  # not one of its sources
    _, late = memory_log.write("model:1", [ping("rejected"), ping("v1")])
    assert repo.observe(late, into="job:1") is Observed.GAP
    reads = len(memory_log.reads)
    loaded = await repo.load("job:1")  # stale: both sources read on, from where it got
    assert loaded.state.notes == ["opened", "accepted", "rejected", "v1"]
    assert memory_log.reads[reads:] == [("job:1", 1), ("model:1", 1)]
