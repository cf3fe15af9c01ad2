"""An asynchronous job's replay on MongoDB/FerretDB: the same versions, bit for bit, as
the simulation built them (the contract suite's replay, ``tests/contract/async_replay.py``,
which ``tests/contract/test_async_replay.py`` runs on the in-memory log)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

import peertrain.sim as sim
from peertrain.common.eventlog import EventLog

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "contract"))
from async_replay import ASYNC_VOLUNTEERS, async_spec, replay_versions, versions_of
from contract_specs import sim_data

pytestmark = [pytest.mark.stack]


@pytest.mark.parametrize("calibration", ["none", "cached"])
async def test_replaying_an_async_jobs_log_on_mongodb_gives_its_versions_bit_for_bit(
    event_log: EventLog, tmp_path: Path, calibration: str
) -> None:
    data = sim_data(tmp_path, dataset_id="contract-async")
    volunteers = sim.Volunteers(**ASYNC_VOLUNTEERS)
    result = await asyncio.to_thread(
        sim.run,
        async_spec(calibration),
        data,
        peers=4,
        volunteers=volunteers,
        device="cpu",
        threads=1,
    )
    assert result.state == "completed", result.error
    original = versions_of([e.data for e in result.log.events])
    assert sorted(original) == [0, 1, 2, 3, 4, 5]
    assert await replay_versions(result, event_log, tmp_path / "work") == original
