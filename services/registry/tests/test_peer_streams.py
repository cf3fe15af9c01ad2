"""Peer streams through the repository, with the directory as its cache (no stack)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from peertrain.common.eventlog import ConcurrencyError, MemoryEventLog
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.peers import PeerEnrolled, PeerWentOnline
from peertrain.registry.directory import PeerDirectory
from peertrain.registry.domain.peer import decide_online
from peertrain.registry.usecases.streams import PeerStreams


async def write(
    log: MemoryEventLog, stream: str, events: Sequence[NewEvent]
) -> list[RecordedEvent]:
    """Append ``events`` at the end of ``stream`` (another writer, or auth)."""
    return await log.append(stream, events, expected_version=await log.stream_version(stream))


async def enroll(log: MemoryEventLog, peer: str = "p") -> RecordedEvent:
    data = PeerEnrolled(peer_id=peer, owner_id="u", name="box")
    return (await write(log, f"peer:{peer}", [NewEvent.of(data, producer="auth")]))[0]


def streams(log: MemoryEventLog) -> tuple[PeerStreams, PeerDirectory]:
    directory = PeerDirectory()
    return PeerStreams(log, directory, producer="registry"), directory


async def test_a_write_lands_in_the_directory_at_once_and_is_flushed_later() -> None:
    log = MemoryEventLog()
    await enroll(log)
    writer, directory = streams(log)
    reads: list[str] = []
    read_stream = log.read_stream

    async def counted(stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        reads.append(stream)
        return await read_stream(stream, after_seq=after_seq)

    log.read_stream = counted  # type: ignore[method-assign]
    recorded = await writer.execute("p", lambda r: decide_online(r, 2.0), actor="p")
    assert [e.seq for e in recorded] == [2]
    record = directory.get("p")
    assert record is not None and record.online and record.version == 2
    assert [r.peer_id for r in directory.take_dirty()] == ["p"]
    assert await writer.execute("p", lambda r: decide_online(r, 2.0)) == []  # idempotent
    assert reads == ["peer:p"]


async def test_peers_the_log_does_not_know_are_never_written_to() -> None:
    log = MemoryEventLog()
    writer, directory = streams(log)
    assert await writer.execute("ghost", lambda r: decide_online(r, 2.0)) == []
    assert log.streams == {} and "ghost" not in directory


async def test_a_write_that_conflicts_decides_again_on_the_caught_up_record() -> None:
    log = MemoryEventLog()
    await enroll(log)
    writer, directory = streams(log)
    await writer.record("p")
    online = PeerWentOnline(peer_id="p", interval_s=2.0)
    await write(log, "peer:p", [NewEvent.of(online, producer="registry")])  # another instance
    assert await writer.execute("p", lambda r: decide_online(r, 2.0)) == []
    record = directory.get("p")
    assert record is not None and record.online and record.version == 2


async def test_an_event_from_the_bus_ahead_of_the_directory_reads_the_stream() -> None:
    log = MemoryEventLog()
    await enroll(log)
    writer, directory = streams(log)
    await writer.record("p")
    ahead: Any = None
    for interval in (1.0, 2.0):
        (ahead,) = await write(
            log,
            "peer:p",
            [NewEvent.of(PeerWentOnline(peer_id="p", interval_s=interval), producer="r")],
        )
    await writer.observe(ahead)
    record = directory.get("p")
    assert record is not None and (record.version, record.interval_s) == (3, 2.0)


async def test_a_stream_that_keeps_moving_raises_after_five_attempts() -> None:
    log = MemoryEventLog()
    await enroll(log)
    writer, _ = streams(log)
    real = log.append
    attempts = 0

    async def busy(stream: str, events: Sequence[NewEvent], *, expected_version: int) -> Any:
        nonlocal attempts
        attempts += 1
        data = PeerWentOnline(peer_id="p", interval_s=float(attempts))
        other = [NewEvent.of(data, producer="other")]  # lands first, every time
        await real(stream, other, expected_version=await log.stream_version(stream))
        return await real(stream, events, expected_version=expected_version)

    log.append = busy  # type: ignore[method-assign]
    with pytest.raises(ConcurrencyError):
        await writer.execute("p", lambda r: [PeerWentOnline(peer_id="p", interval_s=9.0)])
    assert attempts == 5
