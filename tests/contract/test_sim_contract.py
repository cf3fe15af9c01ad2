"""The contract suite on the simulation (no stack): each case tells its story.

The platform side (``tests/stack/training/test_contract.py``) runs the same cases on
real peers and asserts the final weights are these, bit for bit. Here, what each case
promises is checked on the simulation's event log, and where a disturbance must leave
no trace in the model (a re-opened round, an excluded peer whose shard others train
with its own seed), the weights are compared with the undisturbed run's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import torch
from contract_specs import CASES, DIVERGING, Case, sim_data, simulate

import peertrain.sim as sim
from peertrain.common.events.models import UpdateAccepted, UpdateRejected
from peertrain.common.events.training import (
    JobFailed,
    PeerExcluded,
    RoundClosed,
    RoundFailed,
    TaskAssigned,
    TaskLost,
)

_results: dict[str, sim.SimResult] = {}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> sim.SimData:
    return sim_data(tmp_path_factory.mktemp("contract"), dataset_id="contract")


def run(case: Case, data: sim.SimData) -> sim.SimResult:
    """``case`` on the simulation, once per module."""
    if case.name not in _results:
        _results[case.name] = simulate(case, data)
    result = _results[case.name]
    assert result.state == "completed", result.error
    return result


def of(result: sim.SimResult, kind: type) -> list[Any]:
    return [e.data for e in result.log.events if isinstance(e.data, kind)]


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def per_round(result: sim.SimResult) -> Counter[int]:
    return Counter(u.round for u in of(result, UpdateAccepted))


@pytest.mark.parametrize("name", list(CASES))
def test_every_case_completes_and_learns_on_the_simulation(data: sim.SimData, name: str) -> None:
    result = run(CASES[name], data)
    assert [m.round for m in result.rounds] == [1, 2, 3]
    assert result.rounds[-1].accuracy > 0.3  # ten classes: well above chance


def test_fedavg_iid_aggregates_every_peer_every_round(data: sim.SimData) -> None:
    result = run(CASES["fedavg-iid"], data)
    assert per_round(result) == {1: 4, 2: 4, 3: 4}
    assert not of(result, UpdateRejected) and not of(result, TaskLost)
    assert result.rounds[-1].accuracy > 0.7


def test_fedprox_and_fedadam_on_dirichlet_shards_each_move_the_model_their_way(
    data: sim.SimData,
) -> None:
    prox = run(CASES["fedprox-dirichlet"], data)
    adam = run(CASES["fedadam-dirichlet"], data)
    for result in (prox, adam):
        assert per_round(result) == {1: 4, 2: 4, 3: 4}
        (sharded,) = (e.data for e in result.log.events if e.type == "dataset.sharded")
        assert len({s.rows for s in sharded.shards}) > 1  # label skew: uneven shards
    assert not same(prox.state_dict, adam.state_dict)
    fedavg_iid = run(CASES["fedavg-iid"], data)
    assert not same(prox.state_dict, fedavg_iid.state_dict)


def test_trimmed_mean_folds_two_hostile_updates_in_and_trims_them_away(
    data: sim.SimData,
) -> None:
    case = CASES["trimmed-mean-two-hostile"]
    result = run(case, data)
    # nothing refuses them (no norm bound in the way): the strategy is what defends
    assert per_round(result) == {1: 5, 2: 5, 3: 5} and not of(result, UpdateRejected)
    plain = Case("fedavg-two-hostile", case.peers, {**case.aggregation, "strategy": "fedavg"})
    averaged = simulate(plain, data)
    assert result.rounds[-1].accuracy > averaged.rounds[-1].accuracy + 0.2


def test_a_round_short_of_min_peers_is_reopened_and_ends_as_if_nobody_dropped(
    data: sim.SimData,
) -> None:
    case = CASES["dropout-reopened"]
    result = run(case, data)
    (failed,) = of(result, RoundFailed)
    assert (failed.round, failed.attempt, failed.accepted, failed.retry) == (1, 1, 2, True)
    (lost,) = of(result, TaskLost)
    assert (lost.round, lost.reason, lost.peer_id) == (1, "deadline", "peer-00002")
    closed = of(result, RoundClosed)
    assert [(c.round, c.attempt, len(c.included)) for c in closed] == [
        (1, 2, 3),
        (2, 1, 3),
        (3, 1, 3),
    ]
    # the seed is the shard's and the round's, not the attempt's: no trace in the model
    honest = simulate(Case("three-honest", ("honest",) * 3, case.aggregation), data)
    assert same(result.state_dict, honest.state_dict)


def test_a_peer_refused_twice_is_excluded_and_others_train_its_shard(data: sim.SimData) -> None:
    result = run(CASES["nan-peer-excluded"], data)
    rejected = of(result, UpdateRejected)
    assert [(r.round, r.peer_id, r.code) for r in rejected] == [
        (1, "peer-00003", "non_finite"),
        (2, "peer-00003", "non_finite"),
    ]
    (excluded,) = of(result, PeerExcluded)
    assert excluded.peer_id == "peer-00003"
    late = [t for t in of(result, TaskAssigned) if t.round == 3 and t.peer_id == "peer-00003"]
    assert late == []
    assert per_round(result) == {1: 4, 2: 4, 3: 4}  # shard 3 too, trained by another peer
    # with shard 3's own seed: the model is the all-honest run's, bit for bit
    assert same(result.state_dict, run(CASES["fedavg-iid"], data).state_dict)


def test_a_diverging_job_fails_by_itself_as_training_diverged_and_blames_no_peer(
    data: sim.SimData,
) -> None:
    result = simulate(DIVERGING, data)
    assert result.state == "failed"
    (failed,) = of(result, JobFailed)
    assert failed.code == "training_diverged" and "round 1" in failed.reason
    assert "training.lr" in failed.reason and "aggregation.max_update_norm" in failed.reason
    rejected = of(result, UpdateRejected)
    assert rejected and not any(r.strike for r in rejected)
    assert not of(result, PeerExcluded) and not of(result, RoundFailed)


@pytest.mark.parametrize(
    ("name", "kind", "fewer"), [("int8-blockwise", "int8", 3), ("topk-error-feedback", "topk", 4)]
)
def test_compressed_updates_record_their_bytes_and_weigh_less(
    data: sim.SimData, name: str, kind: str, fewer: float
) -> None:
    """The safetensors header (names, shapes, offsets) weighs on this 2,442-parameter
    model: int8 saves 3.2x of the upload here, 3.9x on the data alone."""
    dense = of(run(CASES["fedavg-iid"], data), UpdateAccepted)
    accepted = of(run(CASES[name], data), UpdateAccepted)
    assert per_round(run(CASES[name], data)) == {1: 4, 2: 4, 3: 4}
    assert {u.compression for u in accepted} == {kind}
    assert {u.dense_size for u in accepted} == {u.dense_size for u in dense}
    assert {u.compression for u in dense} == {"none"}
    assert sum(u.size for u in dense) >= fewer * sum(u.size for u in accepted)
