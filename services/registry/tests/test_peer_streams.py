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


class Log(MemoryEventLog):
    """The event log in memory, counting stream reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        self.reads += 1
        return await super().read_stream(stream, after_seq=after_seq)

    async def write(self, stream: str, events: Sequence[NewEvent]) -> list[RecordedEvent]:
        """Append ``events`` at the end of ``stream`` (another writer, or auth)."""
        return await self.append(stream, events, expected_version=await self.stream_version(stream))


async def enroll(log: Log, peer: str = "p") -> RecordedEvent:
    data = PeerEnrolled(peer_id=peer, owner_id="u", name="box")
    return (await log.write(f"peer:{peer}", [NewEvent.of(data, producer="auth")]))[0]


def streams(log: Log) -> tuple[PeerStreams, PeerDirectory]:
    directory = PeerDirectory()
    return PeerStreams(log, directory, producer="registry"), directory  # type: ignore[arg-type]


async def test_a_write_lands_in_the_directory_at_once_and_is_flushed_later() -> None:
    log = Log()
    await enroll(log)
    writer, directory = streams(log)
    recorded = await writer.execute("p", lambda r: decide_online(r, 2.0), actor="p")
    assert [e.seq for e in recorded] == [2]
    record = directory.get("p")
    assert record is not None and record.online and record.version == 2
    assert [r.peer_id for r in directory.take_dirty()] == ["p"]
    assert await writer.execute("p", lambda r: decide_online(r, 2.0)) == []  # idempotent
    assert log.reads == 1


async def test_peers_the_log_does_not_know_are_never_written_to() -> None:
    log = Log()
    writer, directory = streams(log)
    assert await writer.execute("ghost", lambda r: decide_online(r, 2.0)) == []
    assert log.streams == {} and "ghost" not in directory


async def test_a_write_that_conflicts_decides_again_on_the_caught_up_record() -> None:
    log = Log()
    await enroll(log)
    writer, directory = streams(log)
    await writer.record("p")
    online = PeerWentOnline(peer_id="p", interval_s=2.0)
    await log.write("peer:p", [NewEvent.of(online, producer="registry")])  # another instance
    assert await writer.execute("p", lambda r: decide_online(r, 2.0)) == []
    record = directory.get("p")
    assert record is not None and record.online and record.version == 2


async def test_an_event_from_the_bus_ahead_of_the_directory_reads_the_stream() -> None:
    log = Log()
    await enroll(log)
    writer, directory = streams(log)
    await writer.record("p")
    ahead: Any = None
    for interval in (1.0, 2.0):
        (ahead,) = await log.write(
            "peer:p", [NewEvent.of(PeerWentOnline(peer_id="p", interval_s=interval), producer="r")]
        )
    await writer.observe(ahead)
    record = directory.get("p")
    assert record is not None and (record.version, record.interval_s) == (3, 2.0)


async def test_a_stream_that_keeps_moving_raises_after_five_attempts() -> None:
    log = Log()
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
