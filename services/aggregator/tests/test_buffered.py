"""Asynchronous rounds (FedBuff) in the aggregator: staleness weights and refusals, and
the same bits whether a version is built from the running sum or rebuilt."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch

from peertrain.aggregator.domain import codes
from peertrain.aggregator.domain.buffered import staleness_factor
from peertrain.aggregator.usecases.numerics import load_state
from peertrain.common.events.datasets import ArtifactRef
from peertrain.common.events.models import ModelVersionCreated, UpdateAccepted, UpdateRejected
from peertrain.common.events.training import IncludedUpdate, JobCreated, RoundClosed
from peertrain.common.specs import parse_aggregation_spec
from peertrain.ml.weights import state_to_bytes

from .conftest import JOB, SHA, configured, opened, task
from .test_application import HOLDOUT_KEY, Platform, _delta, _holdout, buffered_close

ROWS = (30, 50, 20, 40)


def _included(t_id: str, shard: int, base: int | None) -> IncludedUpdate:
    return IncludedUpdate(
        shard=shard, peer_id=f"p{shard}", task_id=t_id, key="k", sha256=SHA, base_version=base
    )


def test_staleness_weights_are_one_over_a_power_of_one_plus_staleness():
    spec = parse_aggregation_spec({"mode": "async", "staleness_exponent": 0.5})
    closed = RoundClosed(
        job_id=JOB, round=4, attempt=1, reason="buffered", included=(_included("t", 0, 3),)
    )
    assert staleness_factor(spec, closed, _included("t", 0, 3)) == 1.0
    assert staleness_factor(spec, closed, _included("t", 0, 0)) == 1 / math.sqrt(4)
    off = parse_aggregation_spec({"mode": "async", "staleness_exponent": 0})
    assert staleness_factor(off, closed, _included("t", 0, 0)) == 1.0
    sync = parse_aggregation_spec({})
    assert staleness_factor(sync, closed, _included("t", 0, None)) == 1.0


@pytest.mark.parametrize(
    "block",
    [
        {"buffer_size": 2, "mode": "sync"},
        {"mode": "async", "peers_per_round": 2},
        {"mode": "async", "max_staleness": -1},
        {"mode": "async", "staleness_exponent": -0.5},
        {"mode": "later"},
    ],
)
def test_async_knobs_are_checked(block):
    with pytest.raises(Exception, match="aggregation spec is not valid"):
        parse_aggregation_spec(block)


async def _run(
    tmp: Path,
    *,
    rebuild: bool,
    strategy: str = "fedavg",
    calibration: str = "none",
    source: str = "memory",
    reads: list[str] | None = None,
) -> tuple[Platform, list[object]]:
    """Round 1 takes p0 and p1; round 2 takes p0's next (fresh) and p2's (one version
    stale); then a two versions stale update comes; returns the model stream. A round
    ``rebuild`` takes its updates from ``source``: the decoded deltas kept in memory, or
    the bucket (read, checked and decoded again). ``reads``: gets the keys read."""
    tmp.mkdir(parents=True, exist_ok=True)
    p = Platform(tmp)
    if reads is not None:
        stream = p.blobs.get_stream

        def counted(key: str, *args: Any, **kwargs: Any) -> Any:
            reads.append(key)
            return stream(key, *args, **kwargs)

        p.blobs.get_stream = counted  # type: ignore[method-assign]
    holdout = _holdout()
    await p.blobs.put_bytes(HOLDOUT_KEY, holdout)
    ref = ArtifactRef(key=HOLDOUT_KEY, sha256=hashlib.sha256(holdout).hexdigest(), size=1)
    block = {
        "strategy": strategy,
        "mode": "async",
        "buffer_size": 2,
        "max_staleness": 1,
        "calibration": calibration,
    }
    cfg = configured(rows=ROWS, aggregation=block, rounds=3).model_copy(update={"holdout": ref})
    await p.job_event(
        JobCreated(
            job_id=JOB, owner_id="u1", name="n", dataset_id="d", peers=("p0", "p1", "p2", "p3")
        )
    )
    await p.job_event(cfg)
    await p.job_event(opened(1))
    r1 = [task(s, f"p{s}", round_=1) for s in range(4)]
    for t in r1:
        await p.job_event(t)
    v0 = load_state(await p.blobs.get_bytes(f"models/{JOB}/v0.safetensors"))

    async def upload(t, scale: float) -> UpdateAccepted:  # type: ignore[no-untyped-def]
        await p.upload(t, state_to_bytes(_delta(v0, scale)))
        last = (await p.model_events())[-1]
        assert isinstance(last, UpdateAccepted), last
        return last

    async def close(round_: int, pairs: list[tuple[UpdateAccepted, int]]) -> None:
        if rebuild:
            p.app.rounds.pop(JOB, None)
            if source == "bucket":
                p.app.deltas.forget(JOB)
        await p.job_event(buffered_close(round_, pairs))

    a0, a1 = await upload(r1[0], 0.01), await upload(r1[1], 0.02)
    await close(1, [(a0, 0), (a1, 0)])
    await p.job_event(opened(2))
    r2 = task(0, "p0", round_=2)
    await p.job_event(r2)
    stale = await upload(r1[2], -0.03)  # trained from version 0, arrives in round 2
    fresh = await upload(r2, 0.04)
    assert p.app.rounds[JOB].round == 2  # folded into the round open now
    await close(2, [(stale, 0), (fresh, 1)])
    await p.job_event(opened(3))
    r3 = task(1, "p1", round_=3)
    await p.job_event(r3)
    late = r1[3]  # another version-0 task: two versions stale now
    await p.upload(late, state_to_bytes(_delta(v0, 0.05)))
    return p, await p.model_events()


def _version(events: list[object], v: int) -> ModelVersionCreated:
    return next(e for e in events if isinstance(e, ModelVersionCreated) and e.version == v)


@pytest.mark.parametrize("source", ["memory", "bucket"])
@pytest.mark.parametrize("strategy", ["fedavg", "fedprox", "fedadam", "trimmed_mean", "median"])
async def test_a_version_has_the_same_bits_from_the_running_sum_or_rebuilt(
    tmp_path, strategy, source
):
    _, running = await _run(tmp_path / "a", rebuild=False, strategy=strategy)
    _, rebuilt = await _run(tmp_path / "b", rebuild=True, strategy=strategy, source=source)
    for v in (1, 2):
        assert _version(running, v).sha256 == _version(rebuilt, v).sha256


async def test_a_round_made_again_takes_its_updates_from_memory_not_the_bucket(tmp_path):
    """Each accepted update's decoded delta is kept: the rebuilds of both rounds read
    no update from the bucket (they used to read, check and decode each one again)."""
    reads: list[str] = []
    _, events = await _run(tmp_path, rebuild=True, reads=reads)
    assert _version(events, 1).sha256 and _version(events, 2).sha256
    accepted = [e.key for e in events if isinstance(e, UpdateAccepted)]
    assert len(accepted) == 4
    assert not [k for k in reads if k in accepted]  # the accepted copies: never read
    reads.clear()
    _, events = await _run(tmp_path / "b", rebuild=True, source="bucket", reads=reads)
    accepted = [e.key for e in events if isinstance(e, UpdateAccepted)]
    assert Counter(k for k in reads if k in accepted) == Counter(accepted)  # each read back


@pytest.mark.parametrize("strategy", ["fedavg", "fedadam"])
async def test_a_calibrated_version_has_the_same_bits_from_the_running_sum_or_rebuilt(
    tmp_path, strategy
):
    p, running = await _run(tmp_path / "a", rebuild=False, strategy=strategy, calibration="cached")
    q, rebuilt = await _run(
        tmp_path / "b", rebuild=True, strategy=strategy, calibration="cached", source="bucket"
    )
    _, plain = await _run(tmp_path / "c", rebuild=False, strategy=strategy)
    for v in (1, 2):
        mine, theirs = _version(running, v), _version(rebuilt, v)
        assert mine.sha256 == theirs.sha256
        assert mine.server_state_key is not None and theirs.server_state_key is not None
        assert await p.blobs.get_bytes(mine.server_state_key) == await q.blobs.get_bytes(
            theirs.server_state_key
        )
    # Version 1 had nothing cached (the plain mean); version 2 steps on the cache.
    assert _version(running, 1).sha256 == _version(plain, 1).sha256
    assert _version(running, 2).sha256 != _version(plain, 2).sha256


async def test_a_stale_update_counts_less_and_a_too_stale_one_is_refused(tmp_path):
    p, events = await _run(tmp_path, rebuild=False)
    refused = events[-1]
    assert isinstance(refused, UpdateRejected) and refused.code == codes.TOO_STALE
    assert refused.strike is False
    v1, v2 = [load_state(await p.blobs.get_bytes(_version(events, v).key)) for v in (1, 2)]
    # version 2 = version 1 + the mean of -0.03 (20 rows, one version stale: / sqrt 2)
    # and 0.04 (30 rows, fresh), weighted: every value of the deltas is the same
    w_stale, w_fresh = 20 / math.sqrt(2), 30.0
    step = (w_stale * -0.03 + w_fresh * 0.04) / (w_stale + w_fresh)
    name = next(k for k, t in v1.items() if t.is_floating_point())
    moved = (v2[name].double() - v1[name].double()).flatten()
    assert torch.allclose(moved, torch.full_like(moved, step), atol=1e-6)
