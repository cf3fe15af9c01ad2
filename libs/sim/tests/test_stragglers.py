"""Stragglers in the simulation: over-selection and the adaptive deadline on peers of
log-normal speeds (virtual time: deterministic, not a wall-clock timing)."""

from __future__ import annotations

from typing import Any

import pytest

from peertrain import sim
from peertrain.common.events.training import RoundClosed, RoundOpened, TaskLost
from peertrain.sim import SimData, SimResult

from .conftest import blobs

SPEED = sim.Volunteers(speed_sigma=1.0, seed=3)
TRAINING = {"rounds": 6, "lr": 0.1, "batch_size": 16, "local_epochs": 1, "seed": 7}


@pytest.fixture(scope="module")
def data() -> SimData:
    return blobs(rows=800, seed=1)


def job(**aggregation: Any) -> dict[str, Any]:
    return {
        "model": {"arch": "mlp", "hidden": [16]},
        "training": TRAINING,
        "aggregation": {"strategy": "fedavg", **aggregation},
    }


def events(result: SimResult, kind: type[Any]) -> list[Any]:
    return [e.data for e in result.log.events if isinstance(e.data, kind)]


def per_round_s(result: SimResult) -> float:
    return result.rounds[-1].virtual_s / len(result.rounds)


def test_over_selection_cuts_the_virtual_time_per_round_at_the_same_accuracy(
    data: SimData,
) -> None:
    every = sim.run(job(), data, peers=8, volunteers=SPEED, device="cpu")
    first_6 = sim.run(job(over_select=2), data, peers=8, volunteers=SPEED, device="cpu")
    assert every.state == first_6.state == "completed", (every.error, first_6.error)
    # 8 tasks a round, closed on the first 6: the two slowest peers never hold a round
    assert all(len(c.included) == 6 for c in events(first_6, RoundClosed))
    surplus = [t for t in events(first_6, TaskLost) if t.reason == "surplus"]
    assert len(surplus) == 2 * len(first_6.rounds)
    assert per_round_s(first_6) < 0.75 * per_round_s(every)
    assert abs(first_6.rounds[-1].accuracy - every.rounds[-1].accuracy) <= 0.01


def test_the_adaptive_deadline_stops_waiting_for_a_silent_peer_after_the_first_round(
    data: SimData,
) -> None:
    silent = sim.Volunteers(speed_sigma=0.3, seed=3, unanswered=((0, 2, 1), (0, 3, 1)))
    block = {"round_deadline_s": 3600, "min_peers": 2}
    fixed = sim.run(job(**block), data, peers=4, volunteers=silent, device="cpu")
    adaptive = sim.run(
        job(**block, deadline="adaptive", deadline_floor_s=1.0),
        data,
        peers=4,
        volunteers=silent,
        device="cpu",
    )
    assert fixed.state == adaptive.state == "completed", (fixed.error, adaptive.error)
    opened = [e for e in adaptive.log.events if isinstance(e.data, RoundOpened)]
    seconds = [(e.data.deadline - e.occurred_at).total_seconds() for e in opened]
    assert seconds[0] == 3600  # nothing measured yet
    assert all(s < 60 for s in seconds[1:])  # a multiple of the measured durations
    # round 2 waits an hour for the silent peer on the fixed deadline, minutes adaptive
    assert adaptive.virtual_s < fixed.virtual_s - 3000
    closed = {c.round: c.reason for c in events(adaptive, RoundClosed)}
    assert closed[2] == closed[3] == "deadline"
