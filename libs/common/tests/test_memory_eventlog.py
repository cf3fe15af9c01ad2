"""The in-memory event log answers what the real one answers (the contract suite), and
numbers its whole log 1, 2, 3, ... in one list."""

from __future__ import annotations

import pytest
from eventlog_contract import EventLogContract, ping

from peertrain.common.eventlog import MemoryEventLog


class TestMemoryEventLog(EventLogContract):
    @pytest.fixture
    def log(self) -> MemoryEventLog:
        return MemoryEventLog()


async def test_positions_are_the_place_in_one_list_and_nothing_waits_for_a_broker() -> None:
    log = MemoryEventLog()
    first = await log.append("job:a", [ping(1), ping(2)], expected_version=0)
    other = await log.append("job:b", [ping(3)], expected_version=0)
    assert [e.position for e in first + other] == [1, 2, 3]
    assert log.events == first + other and log.streams["job:b"] == other
    assert await log.count_unpublished() == 0 and await log.count_unpublished(producer="test") == 0
