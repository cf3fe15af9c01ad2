"""An asynchronous job's replay on the in-memory log: the same versions, bit for bit
(``tests/stack/test_async_replay.py`` replays it on MongoDB/FerretDB)."""

from __future__ import annotations

from pathlib import Path

import pytest
from async_replay import ASYNC_VOLUNTEERS, async_spec, replay_versions, versions_of
from contract_specs import sim_data

import peertrain.sim as sim
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events.models import UpdateChecked
from peertrain.common.events.training import RoundClosed


@pytest.fixture(scope="module", params=["none", "cached", "verified"])
def result(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> sim.SimResult:
    """The job, as plain FedBuff, calibrated (``calibration: cached``), and with checked
    work (``verify``: checks, verdicts, updates held for them; a lazy peer)."""
    return _run(tmp_path_factory, request.param)


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory) -> sim.SimResult:
    return _run(tmp_path_factory, "verified")


def _run(tmp_path_factory: pytest.TempPathFactory, kind: str) -> sim.SimResult:
    data = sim_data(tmp_path_factory.mktemp("async"), dataset_id="contract-async")
    if kind == "verified":
        volunteers = sim.Volunteers(**ASYNC_VOLUNTEERS, hostile_modes=((3, "zeros"),))
        spec = async_spec("none")
        spec["aggregation"] = {**spec["aggregation"], "verify": {"share": 0.5}}
    else:
        volunteers = sim.Volunteers(**ASYNC_VOLUNTEERS)
        spec = async_spec(kind)
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


def test_a_lazy_peer_s_updates_never_reach_a_checked_async_version(
    verified: sim.SimResult,
) -> None:
    result = verified
    lazy = "peer-00003"  # the simulation's fourth peer, sending zeros
    verdicts = [e.data for e in result.log.events if isinstance(e.data, UpdateChecked)]
    mine = [v for v in verdicts if lazy in (v.peer_id, v.other_peer_id)]
    assert mine and not any(v.agree for v in mine)
    closed = [e.data for e in result.log.events if isinstance(e.data, RoundClosed)]
    assert all(u.peer_id != lazy for c in closed for u in c.included)
