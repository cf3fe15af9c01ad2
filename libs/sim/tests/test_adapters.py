from __future__ import annotations

import pytest

from peertrain.common.blobs import BlobNotFound
from peertrain.common.eventlog import ConcurrencyError
from peertrain.common.events import NewEvent
from peertrain.common.events.training import JobCancelled
from peertrain.sim import MemoryBlobStore, MemoryEventLog


def _event(by: str = "u") -> NewEvent:
    return NewEvent.of(JobCancelled(job_id="j", by=by), producer="test")


async def test_append_at_the_expected_version_numbers_the_stream_and_the_log() -> None:
    log = MemoryEventLog()
    seen: list[int] = []
    log.on_append(lambda events: seen.extend(e.position for e in events))
    first = await log.append("job:j", [_event(), _event()], expected_version=0)
    other = await log.append("job:k", [_event()], expected_version=0)
    assert [e.seq for e in first] == [1, 2] and other[0].seq == 1
    assert seen == [1, 2, 3]
    assert [e.id for e in await log.read_stream("job:j", after_seq=1)] == [first[1].id]
    assert await log.stream_version("job:j") == 2
    assert [e.id async for e in log.read_all(after_position=2)] == [other[0].id]


async def test_a_stale_expected_version_is_a_concurrency_error() -> None:
    log = MemoryEventLog()
    await log.append("job:j", [_event()], expected_version=0)
    with pytest.raises(ConcurrencyError):
        await log.append("job:j", [_event()], expected_version=0)


async def test_appending_the_same_events_again_answers_them_as_stored() -> None:
    log = MemoryEventLog()
    event = _event()
    first = await log.append("job:j", [event], expected_version=0)
    again = await log.append("job:j", [event], expected_version=0)
    assert again == first and await log.stream_version("job:j") == 1


async def test_blobs_round_trip_and_a_missing_key_is_blob_not_found() -> None:
    blobs = MemoryBlobStore()
    put = await blobs.put_bytes("a/b", b"x" * 10)
    assert put.size == 10 and await blobs.get_sha256("a/b") == put.sha256
    assert b"".join([c async for c in blobs.get_stream("a/b", chunk_size=3)]) == b"x" * 10
    assert [i.key for i in await blobs.list("a/")] == ["a/b"]
    with pytest.raises(BlobNotFound):
        await blobs.get_bytes("nope")
    with pytest.raises(BlobNotFound):
        [c async for c in blobs.get_stream("nope")]
    assert await blobs.delete_prefix("a/") == 1 and not await blobs.exists("a/b")
