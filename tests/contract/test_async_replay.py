"""An asynchronous job's replay on the in-memory log: the same versions, bit for bit
(``tests/stack/test_async_replay.py`` replays it on MongoDB/FerretDB)."""

from __future__ import annotations

from pathlib import Path

import pytest
from async_replay import ASYNC_VOLUNTEERS, async_spec, replay_versions, versions_of
from contract_specs import sim_data

import peertrain.sim as sim
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events.training import RoundClosed


@pytest.fixture(scope="module", params=["none", "cached"])
def result(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> sim.SimResult:
    """The job, as plain FedBuff and calibrated (``calibration: cached``)."""
    data = sim_data(tmp_path_factory.mktemp("async"), dataset_id="contract-async")
    volunteers = sim.Volunteers(**ASYNC_VOLUNTEERS)
    spec = async_spec(request.param)
    out = sim.run(spec, data, peers=4, volunteers=volunteers, device="cpu", threads=1)
    assert out.state == "completed", out.error
    return out


def test_an_async_job_takes_stale_updates_into_later_versions(result: sim.SimResult) -> None:
    closed = [e.data for e in result.log.events if isinstance(e.data, RoundClosed)]
    assert [c.round for c in closed] == [1, 2, 3, 4, 5]
    assert any(u.base_version < c.round - 1 for c in closed for u in c.included)  # type: ignore[operator]


async def test_replaying_an_async_jobs_log_gives_its_versions_bit_for_bit(
    result: sim.SimResult, tmp_path: Path
) -> None:
    original = versions_of([e.data for e in result.log.events])
    assert sorted(original) == [0, 1, 2, 3, 4, 5]
    assert await replay_versions(result, MemoryEventLog(), tmp_path) == original
