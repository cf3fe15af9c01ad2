"""Checked work through the platform's own apps: lazy peers are struck and excluded."""

from __future__ import annotations

import pytest

import peertrain.sim as sim
from peertrain.common.events.models import UpdateChecked
from peertrain.common.events.training import PeerExcluded, RoundClosed, TaskAssigned
from peertrain.orchestrator.domain import Job

from .conftest import SPEC


def _strikes(result: sim.SimResult) -> dict[str, list[str]]:
    job = Job("sim")
    for event in result.log.events:
        if event.stream.endswith(":sim"):
            job.apply(event)
    return {p: [s.code for s in struck] for p, struck in job.strikes.items()}


@pytest.mark.parametrize("modes", [("zeros", "tenth"), ("replay", "noise")])
def test_lazy_peers_are_struck_and_excluded_and_no_honest_peer_is(small_data, modes) -> None:
    spec = {
        **SPEC,
        "training": {**SPEC["training"], "rounds": 6},
        "aggregation": {"min_peers": 2, "verify": {"share": 0.05}},
    }
    volunteers = sim.Volunteers(hostile_modes=((4, modes[0]), (5, modes[1])))
    result = sim.run(spec, small_data, peers=6, volunteers=volunteers, device="cpu")
    assert result.state == "completed", result.error
    lazy = {"peer-00004", "peer-00005"}
    excluded = {e.data.peer_id for e in result.log.events if isinstance(e.data, PeerExcluded)}
    assert excluded == lazy
    strikes = _strikes(result)
    assert set(strikes) == lazy and all(c == "check_mismatch" for s in strikes.values() for c in s)
    checked = [e.data for e in result.log.events if isinstance(e.data, UpdateChecked)]
    assert any(c.agree for c in checked) and any(not c.agree for c in checked)
    # one update per shard, and every round after the exclusions without the lazy ones
    last = [e.data for e in result.log.events if isinstance(e.data, RoundClosed)][-1]
    assert len({u.shard for u in last.included}) == len(last.included) == 6
    assert not {u.peer_id for u in last.included} & lazy


def test_without_verify_no_task_is_trained_twice(small_data) -> None:
    volunteers = sim.Volunteers(hostile_modes=((0, "zeros"),))
    result = sim.run(SPEC, small_data, peers=3, volunteers=volunteers, device="cpu")
    assigned = [e.data for e in result.log.events if isinstance(e.data, TaskAssigned)]
    assert result.state == "completed" and all(t.checks is None for t in assigned)
