"""The aggregate repository's writes: decide, append at the version, retry on conflict."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from peertrain.common.eventlog import ConcurrencyError, Fold, Loaded, Repository
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


def stored(log: Any, stream: str) -> list[str]:
    return [e.data.note for e in log.streams.get(stream, [])]


def another_writer_each_time(log: Any, note: str) -> None:
    def write(stream: str) -> None:
        log.write(stream, [ping(note)])
        log.before_append = write

    log.before_append = write


async def test_execute_appends_at_the_loaded_version_and_folds_what_it_stored(
    memory_log: Any,
) -> None:
    memory_log.write("s:1", [ping("a")])
    repo = repository(memory_log)
    saved = await repo.execute("s:1", lambda notes: [DiagnosticPinged(note=f"after {len(notes)}")])
    assert memory_log.appends == [("s:1", 1)]
    assert [e.seq for e in saved.events] == [2] and saved.events[0].producer == "test"
    assert (saved.state, saved.version) == (("a", "after 1"), 2)
    assert await repo.load("s:1") == Loaded("s:1", ("a", "after 1"), 2)
    assert memory_log.reads == [("s:1", 0)]  # read once: the append was folded, not re-read


async def test_a_concurrent_writer_makes_the_decision_run_again_on_the_fresh_state(
    memory_log: Any,
) -> None:
    memory_log.write("s:1", [ping("a")])
    repo = repository(memory_log)
    await repo.load("s:1")
    memory_log.before_append = lambda stream: memory_log.write(stream, [ping("other")])
    seen: list[Notes] = []

    def decide(notes: Notes) -> list[DiagnosticPinged]:
        seen.append(notes)
        return [DiagnosticPinged(note="mine")]

    saved = await repo.execute("s:1", decide)
    assert seen == [("a",), ("a", "other")]
    assert (saved.state, saved.version) == (("a", "other", "mine"), 3)
    assert memory_log.appends == [("s:1", 1), ("s:1", 2)]
    assert memory_log.reads == [("s:1", 0), ("s:1", 1)]  # after a conflict: only the news
    assert stored(memory_log, "s:1") == ["a", "other", "mine"]


async def test_a_decision_the_fresh_state_makes_moot_appends_nothing(memory_log: Any) -> None:
    repo = repository(memory_log)
    memory_log.before_append = lambda stream: memory_log.write(stream, [ping("done")])
    saved = await repo.execute(
        "s:1", lambda notes: [] if "done" in notes else [DiagnosticPinged(note="done")]
    )
    assert saved.events == () and (saved.state, saved.version) == (("done",), 1)
    assert stored(memory_log, "s:1") == ["done"]


async def test_conflicts_past_the_retries_raise_and_the_next_load_reads_on(
    memory_log: Any,
) -> None:
    repo = repository(memory_log, retries=2)
    memory_log.write("s:1", [ping("a")])
    await repo.load("s:1")
    another_writer_each_time(memory_log, "other")
    with pytest.raises(ConcurrencyError):
        await repo.execute("s:1", lambda _: [DiagnosticPinged(note="mine")])
    memory_log.before_append = None
    assert len(memory_log.appends) == 3  # the first try and two retries
    assert "mine" not in stored(memory_log, "s:1")
    loaded = await repo.load("s:1")
    assert loaded.state == tuple(stored(memory_log, "s:1")) and loaded.version == 4
    assert memory_log.reads[-1] == ("s:1", 3)


async def test_no_retries_raise_at_the_first_conflict(memory_log: Any) -> None:
    repo = repository(memory_log)
    memory_log.before_append = lambda stream: memory_log.write(stream, [ping("other")])
    with pytest.raises(ConcurrencyError):
        await repo.execute("s:1", lambda _: [DiagnosticPinged(note="mine")], retries=0)
    assert memory_log.appends == [("s:1", 0)]


async def test_a_decision_that_raises_appends_nothing(memory_log: Any) -> None:
    repo = repository(memory_log)

    def refuse(_: Notes) -> list[DiagnosticPinged]:
        raise LookupError("no such thing")

    with pytest.raises(LookupError):
        await repo.execute("s:1", refuse)
    assert memory_log.appends == []


async def test_a_new_stream_is_not_read_before_its_first_append(memory_log: Any) -> None:
    repo = repository(memory_log)
    saved = await repo.execute("s:new", lambda _: [DiagnosticPinged(note="first")], new=True)
    assert memory_log.reads == [] and memory_log.appends == [("s:new", 0)]
    assert repo.cached("s:new") == Loaded("s:new", ("first",), 1) == saved.loaded


async def test_a_stream_that_was_not_new_is_read_and_decided_again(memory_log: Any) -> None:
    memory_log.write("s:1", [ping("there")])
    repo = repository(memory_log)
    saved = await repo.execute(
        "s:1", lambda notes: [] if notes else [DiagnosticPinged(note="first")], new=True
    )
    assert saved.events == () and saved.state == ("there",)
    assert memory_log.reads == [("s:1", 0)] and stored(memory_log, "s:1") == ["there"]


async def test_refresh_reads_what_followed_the_cached_version_before_deciding(
    memory_log: Any,
) -> None:
    memory_log.write("s:1", [ping("a")])
    repo = repository(memory_log)
    await repo.load("s:1")
    memory_log.write("s:1", [ping("b")])
    seen: list[Notes] = []
    await repo.execute("s:1", lambda notes: seen.append(notes) or [], refresh=True)
    assert seen == [("a", "b")] and memory_log.reads == [("s:1", 0), ("s:1", 1)]
    assert memory_log.appends == []


async def test_save_appends_a_decision_taken_outside_at_its_version(memory_log: Any) -> None:
    memory_log.write("s:1", [ping("a")])
    repo = repository(memory_log)
    loaded = await repo.load("s:1")
    saved = await repo.save(
        loaded, [DiagnosticPinged(note="b")], actor="u-1", correlation_id="job-1"
    )
    (event,) = saved.events
    assert (event.seq, event.actor, event.correlation_id) == (2, "u-1", "job-1")
    assert repo.cached("s:1") == Loaded("s:1", ("a", "b"), 2)


async def test_save_raises_on_a_conflict_and_the_next_load_reads_on(memory_log: Any) -> None:
    memory_log.write("s:1", [ping("a")])
    repo = repository(memory_log)
    loaded = await repo.load("s:1")
    memory_log.write("s:1", [ping("other")])
    with pytest.raises(ConcurrencyError):
        await repo.save(loaded, [DiagnosticPinged(note="decided on a")])
    assert memory_log.appends == [("s:1", 1)]  # not decided again: the caller decides
    assert await repo.load("s:1") == Loaded("s:1", ("a", "other"), 2)
    assert memory_log.reads == [("s:1", 0), ("s:1", 1)]


async def test_an_event_appended_twice_answers_what_was_stored(memory_log: Any) -> None:
    event = NewEvent.of(DiagnosticPinged(note="once"), producer="auth", event_id="e-1")
    repo = repository(memory_log)
    await repo.execute("s:1", lambda _: [event], new=True)
    repo.forget("s:1")
    again = await repo.execute("s:1", lambda _: [event], new=True)
    assert [(e.id, e.producer, e.seq) for e in again.events] == [("e-1", "auth", 1)]
    assert again.loaded == Loaded("s:1", ("once",), 1) and stored(memory_log, "s:1") == ["once"]


async def test_writers_of_one_process_take_turns_on_a_stream(memory_log: Any) -> None:
    repo = repository(memory_log, retries=0)
    await asyncio.gather(
        *(repo.execute("s:1", lambda n: [DiagnosticPinged(note=str(len(n)))]) for _ in range(5))
    )
    assert stored(memory_log, "s:1") == ["0", "1", "2", "3", "4"]
    assert [version for _, version in memory_log.appends] == [0, 1, 2, 3, 4]
