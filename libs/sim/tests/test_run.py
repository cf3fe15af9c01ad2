from __future__ import annotations

import io

import numpy as np
import torch

import peertrain.sim as sim
from peertrain.common.events.training import JobCompleted

from .conftest import SPEC, blobs


def _types(result: sim.SimResult) -> list[str]:
    return [e.type for e in result.log.events]


def test_a_job_runs_through_the_platforms_events_to_its_final_model(small_data) -> None:
    seen: list[sim.RoundMetrics] = []
    result = sim.run(SPEC, small_data, peers=3, device="cpu", on_round=seen.append)
    assert result.state == "completed", result.error
    assert [m.round for m in result.rounds] == [1, 2, 3] and seen == result.rounds
    assert all(m.peers == 3 and m.attempts == 1 for m in result.rounds)
    assert result.rounds[-1].accuracy > 0.8
    types = _types(result)
    for kind in (
        "job.created",
        "dataset.sharded",
        "job.configured",
        "model.version_created",
        "round.opened",
        "task.assigned",
        "update.accepted",
        "round.closed",
        "model.evaluated",
        "model.exported",
        "job.completed",
    ):
        assert kind in types
    assert types.count("update.accepted") == 9
    completed = result.log.events[-1].data
    assert isinstance(completed, JobCompleted) and completed.final_version == 3
    assert result.final_pt is not None
    final = torch.load(io.BytesIO(result.final_pt), weights_only=True)
    assert final["spec"]["arch"] == "mlp"
    for name, tensor in result.state_dict.items():
        assert torch.equal(final["state_dict"][name], tensor)


def test_the_same_seed_gives_the_same_bits(small_data) -> None:
    one = sim.run(SPEC, small_data, peers=3, device="cpu")
    two = sim.run(SPEC, small_data, peers=3, device="cpu")
    assert one.state_dict.keys() == two.state_dict.keys()
    for name, tensor in one.state_dict.items():
        assert torch.equal(tensor, two.state_dict[name])
    assert [m.loss for m in one.rounds] == [m.loss for m in two.rounds]


def test_the_jobs_sharding_strategy_splits_the_data(small_data) -> None:
    spec = {**SPEC, "sharding": {"strategy": "dirichlet", "alpha": 0.3}}
    result = sim.run(spec, small_data, peers=4, device="cpu")
    sharded = next(e.data for e in result.log.events if e.type == "dataset.sharded")
    sizes = [s.rows for s in sharded.shards]
    assert sum(sizes) == len(small_data.train_y) and len(set(sizes)) > 1


def test_a_fixed_split_is_used_as_given() -> None:
    data = blobs()

    rows = np.arange(len(data.train_y))
    fixed = sim.from_arrays(
        data.train_x,
        data.train_y,
        data.holdout_x,
        data.holdout_y,
        shards=[rows[:10], rows[10:]],
    )
    result = sim.run(SPEC, fixed, peers=2, device="cpu")
    sharded = next(e.data for e in result.log.events if e.type == "dataset.sharded")
    assert [s.rows for s in sharded.shards] == [10, len(rows) - 10]


def test_worker_processes_train_the_same_tasks_to_the_same_model(small_data) -> None:
    alone = sim.run(SPEC, small_data, peers=4, device="cpu", threads=1, workers=0)
    pooled = sim.run(SPEC, small_data, peers=4, device="cpu", threads=1, workers=2)
    assert pooled.state == "completed"
    for name, tensor in alone.state_dict.items():
        assert torch.equal(tensor, pooled.state_dict[name])
