"""The realities of volunteers, met by the platform's own rules."""

from __future__ import annotations

import pytest

import peertrain.sim as sim
from peertrain.common.events.models import UpdateRejected
from peertrain.common.events.peers import PeerWentOffline, PeerWentOnline
from peertrain.common.events.training import PeerExcluded, RoundClosed, TaskAssigned, TaskLost

from .conftest import SPEC


def _data(result: sim.SimResult, kind: type) -> list:
    return [e.data for e in result.log.events if isinstance(e.data, kind)]


def test_peers_per_round_samples_the_peers_of_each_round(small_data) -> None:
    result = sim.run(SPEC, small_data, peers=6, peers_per_round=2, device="cpu")
    assert result.state == "completed"
    assert all(m.peers == 2 for m in result.rounds)
    shards = {r: {t.shard for t in _data(result, TaskAssigned) if t.round == r} for r in (1, 2, 3)}
    assert (
        all(len(s) == 2 for s in shards.values()) and len(set(map(frozenset, shards.values()))) > 1
    )


@pytest.mark.parametrize(("mode", "code"), [("nan", "non_finite"), ("shape", "wrong_tensors")])
def test_hostile_updates_are_rejected_and_their_peer_excluded(small_data, mode, code) -> None:
    spec = {**SPEC, "training": {**SPEC["training"], "rounds": 4}}
    volunteers = sim.Volunteers(hostile=0.25, hostile_mode=mode)
    result = sim.run(spec, small_data, peers=4, volunteers=volunteers, device="cpu")
    assert result.state == "completed", result.error
    rejected = _data(result, UpdateRejected)
    (hostile,) = {r.peer_id for r in rejected}
    assert all(r.code == code for r in rejected if r.peer_id == hostile)
    (excluded,) = _data(result, PeerExcluded)
    assert excluded.peer_id == hostile
    for closed in _data(result, RoundClosed):  # never aggregated
        assert hostile not in {u.peer_id for u in closed.included}


def test_a_norm_attack_is_left_out_of_every_round_from_the_first(small_data) -> None:
    volunteers = sim.Volunteers(hostile=0.25, hostile_mode="norm")
    result = sim.run(SPEC, small_data, peers=4, volunteers=volunteers, device="cpu")
    closed = _data(result, RoundClosed)
    dropped = {d.peer_id for c in closed for d in c.dropped}
    refused = {r.peer_id for r in _data(result, UpdateRejected) if r.code == "norm_too_large"}
    (hostile,) = dropped | refused
    for c in closed:
        assert hostile not in {u.peer_id for u in c.included}
    assert closed[0].dropped or refused  # from round 1 on: the bound is the round's own
    assert result.state == "completed"


def test_a_vanished_peers_task_is_lost_and_given_to_a_spare(small_data) -> None:
    volunteers = sim.Volunteers(dropout=0.3, seed=1)
    result = sim.run(SPEC, small_data, peers=5, volunteers=volunteers, device="cpu")
    assert result.state == "completed", result.error
    lost = [t for t in _data(result, TaskLost) if t.reason == "peer_offline"]
    assert lost
    again = [t for t in _data(result, TaskAssigned) if t.reassigned_from is not None]
    assert {t.reassigned_from for t in again} >= {t.task_id for t in lost}


def test_a_vanished_peer_is_seen_offline_by_the_registrys_events_and_back_for_the_next_round(
    small_data,
) -> None:
    # the orchestrator knows who is online from the registry's events, as on the platform
    volunteers = sim.Volunteers(dropout=0.3, seed=1)
    result = sim.run(SPEC, small_data, peers=5, volunteers=volunteers, device="cpu")
    events = result.log.events
    lost = [e for e in events if isinstance(e.data, TaskLost) and e.data.reason == "peer_offline"]
    assert lost
    for e in lost:
        peer = f"peer:{e.data.peer_id}"
        offline = [
            x.position for x in events if x.stream == peer and isinstance(x.data, PeerWentOffline)
        ]
        back = [
            x.position for x in events if x.stream == peer and isinstance(x.data, PeerWentOnline)
        ]
        assert any(o < e.position for o in offline)  # seen offline, then its task lost
        assert back[-1] > max(o for o in offline if o < e.position)  # online again after


def test_stragglers_miss_the_virtual_deadline_and_the_round_closes_without_them(
    small_data,
) -> None:
    spec = {**SPEC, "aggregation": {"round_deadline_s": 5}}
    volunteers = sim.Volunteers(speed_sigma=1.5, seconds_per_sample=0.05, seed=2)
    result = sim.run(spec, small_data, peers=4, volunteers=volunteers, device="cpu")
    assert result.state == "completed", result.error
    late = [t for t in _data(result, TaskLost) if t.reason == "deadline"]
    assert late
    assert any(c.reason == "deadline" for c in _data(result, RoundClosed))
    assert result.virtual_s >= 3 * 5  # three rounds, each waited for its deadline


def test_scripted_hostile_peers_are_named_by_index() -> None:
    peers = ["a", "b", "c", "d"]
    assert sim.Volunteers(hostile_indices=(1, 3)).hostile_peers(peers) == {"b", "d"}
    with pytest.raises(ValueError, match="hostile_indices"):
        sim.Volunteers(hostile_indices=(4,)).hostile_peers(peers)


def test_a_task_left_unanswered_keeps_its_round_open_until_the_deadline(small_data) -> None:
    spec = {**SPEC, "aggregation": {"round_deadline_s": 7}}
    volunteers = sim.Volunteers(unanswered=((2, 1, 1),))
    result = sim.run(spec, small_data, peers=3, volunteers=volunteers, device="cpu")
    assert result.state == "completed", result.error
    (lost,) = _data(result, TaskLost)
    assert (lost.round, lost.peer_id, lost.reason) == (1, "peer-00002", "deadline")
    closed = _data(result, RoundClosed)
    assert [(c.round, c.reason, len(c.included)) for c in closed] == [
        (1, "deadline", 2),
        (2, "complete", 3),
        (3, "complete", 3),
    ]
    assert result.rounds[0].virtual_s >= 7  # the peer stayed online: nobody took its task
