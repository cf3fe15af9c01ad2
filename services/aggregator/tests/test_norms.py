"""Norm bounds relative to the round: updates clipped at close (pure)."""

from __future__ import annotations

import pytest
import torch

from peertrain.aggregator.domain import JobMemory, clip_factors
from peertrain.aggregator.usecases.numerics import clipped, update_norm
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events.models import UpdateAccepted
from peertrain.common.events.training import IncludedUpdate, RoundClosed
from peertrain.common.specs import parse_aggregation_spec

from .conftest import JOB, SHA, record, task


async def _accept(
    state: JobMemory, log: MemoryEventLog, shard: int, norm: float, *, round_: int = 1
) -> None:
    t = task(shard, f"p{shard}", round_=round_)
    data = UpdateAccepted(
        job_id=JOB,
        round=round_,
        attempt=1,
        shard=shard,
        task_id=t.task_id,
        peer_id=f"p{shard}",
        key=f"k{shard}",
        sha256=SHA,
        size=10,
        norm=norm,
        weight=10,
    )
    state.apply(await record(log, data, model=True))


async def _close(
    state: JobMemory, log: MemoryEventLog, shards: list[int], *, round_: int = 1
) -> RoundClosed:
    included = tuple(
        IncludedUpdate(shard=s, peer_id=f"p{s}", task_id="t", key=f"k{s}", sha256=SHA)
        for s in shards
    )
    closed = RoundClosed(job_id=JOB, round=round_, attempt=1, reason="complete", included=included)
    state.apply(await record(log, closed))
    return closed


async def test_clipping_scales_only_updates_over_k_times_the_round_median(running):
    state, log = running
    for shard, norm in enumerate([2.0, 3.0, 4.0, 60.0]):
        await _accept(state, log, shard, norm)
    closed = await _close(state, log, [0, 1, 2, 3])
    spec = parse_aggregation_spec({})  # norm_clip 2: median 3.5 -> bound 7
    assert clip_factors(state, closed, spec) == {3: pytest.approx(7.0 / 60.0)}
    assert clip_factors(state, closed, parse_aggregation_spec({"norm_clip": None})) == {}


def test_clipped_update_has_the_bound_as_its_norm():
    update = {"w": torch.full((10,), 3.0), "steps": torch.tensor(5)}
    norm = update_norm({"w": update["w"]})
    out = clipped(update, 2.0 / norm)
    assert update_norm({"w": out["w"]}) == pytest.approx(2.0, rel=1e-6)
    assert out["steps"].item() == 5  # integer buffers are left alone
