"""Checked work, the aggregator's part: a check's update is compared, never summed, and
each pair of a check group is compared once, in the append that accepts its second."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest
import torch

from peertrain.aggregator.domain import JobMemory
from peertrain.aggregator.domain.checks import MAX_DISTANCE, partners, verdict
from peertrain.aggregator.usecases.numerics import load_state
from peertrain.common.events.datasets import ArtifactRef
from peertrain.common.events.models import UpdateAccepted, UpdateChecked
from peertrain.common.events.training import JobCreated, TaskAssigned
from peertrain.ml.weights import state_to_bytes

from .conftest import JOB, configured, opened, record, task
from .test_application import HOLDOUT_KEY, Platform, _holdout

PEERS = ("p0", "p1", "p2")


def _check(of: TaskAssigned, peer: str, n: int) -> TaskAssigned:
    t = task(of.shard, peer, n=n)
    return t.model_copy(update={"checks": of.task_id})


async def _configure(platform: Platform, **more: object) -> dict[str, torch.Tensor]:
    holdout = _holdout()
    await platform.blobs.put_bytes(HOLDOUT_KEY, holdout)
    ref = ArtifactRef(key=HOLDOUT_KEY, sha256=hashlib.sha256(holdout).hexdigest(), size=1)
    aggregation = {"strategy": "fedavg", "verify": {"share": 0.1}, **more}
    cfg = configured(aggregation=aggregation).model_copy(update={"holdout": ref})
    created = JobCreated(job_id=JOB, owner_id="u1", name="n", dataset_id="d", peers=PEERS)
    await platform.job_event(created)
    await platform.job_event(cfg)
    await platform.job_event(opened())
    return load_state(await platform.blobs.get_bytes(f"models/{JOB}/v0.safetensors"))


def _honest(base: dict[str, torch.Tensor], noise: float = 0.0) -> bytes:
    g = torch.Generator().manual_seed(1)
    delta = {k: torch.randn(v.shape, generator=g) * 0.01 for k, v in base.items()}
    return state_to_bytes({k: v * (1 + noise) for k, v in delta.items()})


@pytest.fixture
def platform(tmp_path: Path) -> Platform:
    return Platform(tmp_path)


async def test_a_check_is_compared_with_its_task_not_summed(platform: Platform) -> None:
    base = await _configure(platform)
    primary = task(0, "p0")
    check = _check(primary, "p1", n=2)
    await platform.job_event(primary)
    await platform.job_event(check)
    await platform.upload(check, _honest(base, noise=1e-7))  # the check first: any order
    await platform.upload(primary, _honest(base))
    *_, first, second, checked = await platform.model_events()
    assert isinstance(first, UpdateAccepted) and first.checks == primary.task_id
    assert isinstance(second, UpdateAccepted) and second.checks is None
    assert isinstance(checked, UpdateChecked) and checked.agree
    assert checked.checked == primary.task_id and checked.distance < 1e-3
    assert {checked.task_id, checked.other_task_id} == {primary.task_id, check.task_id}
    # only the checked task's update is in the round's running sum
    assert platform.app.rounds[JOB].keys() == {f"{second.key}#{second.sha256}"}


async def test_asynchronous_a_checked_update_waits_for_its_verdict_out_of_the_running_sum(
    platform: Platform,
) -> None:
    """The orchestrator buffers a checked update only once its check confirms it, so the
    holder does not sum it as it arrives (the version that includes it is made from what
    it includes); the comparison is made as in a synchronous job."""
    base = await _configure(platform, mode="async", buffer_size=2)
    primary = task(0, "p0")
    check = _check(primary, "p1", n=2)
    await platform.job_event(primary)
    await platform.job_event(check)
    await platform.upload(primary, _honest(base))
    await platform.upload(check, _honest(base, noise=1e-7))
    *_, accepted, its_check, checked = await platform.model_events()
    assert isinstance(accepted, UpdateAccepted) and accepted.task_id == primary.task_id
    assert isinstance(its_check, UpdateAccepted) and its_check.checks == primary.task_id
    assert isinstance(checked, UpdateChecked) and checked.agree
    work = platform.app.rounds.get(JOB)
    assert work is None or not work.keys()


async def _checked_by_a_lazy_peer(
    platform: Platform,
) -> tuple[dict[str, torch.Tensor], TaskAssigned, TaskAssigned, TaskAssigned]:
    """p0's honest update, checked by p1's zeros; the tie-break for p2 (not given out
    yet). Returns the base, the checked task, its check and the tie-break."""
    base = await _configure(platform)
    primary = task(0, "p0")
    check = _check(primary, "p1", n=2)
    tie = _check(primary, "p2", n=3)
    for t in (primary, check):
        await platform.job_event(t)
    await platform.upload(primary, _honest(base))
    await platform.upload(check, state_to_bytes({k: torch.zeros_like(v) for k, v in base.items()}))
    return base, primary, check, tie


async def test_a_lazy_update_disagrees_and_a_tie_break_is_compared_with_both(
    platform: Platform,
) -> None:
    base, primary, check, tie = await _checked_by_a_lazy_peer(platform)
    *_, checked = await platform.model_events()
    assert isinstance(checked, UpdateChecked) and not checked.agree
    await platform.job_event(tie)
    await platform.upload(tie, _honest(base, noise=1e-6))
    *_, accepted, a, b = await platform.model_events()
    assert isinstance(accepted, UpdateAccepted) and accepted.task_id == tie.task_id
    assert isinstance(a, UpdateChecked) and isinstance(b, UpdateChecked)
    verdicts = {a.task_id: a.agree, b.task_id: b.agree}
    assert verdicts == {primary.task_id: True, check.task_id: False}


async def test_a_tie_break_not_heard_yet_is_read_on_not_taken_for_a_duplicate(
    platform: Platform,
) -> None:
    """The shard has its update already; a tie-break's task.assigned has reached the log
    but not this instance's feed when the tie-break's update comes: the instance reads
    on and compares it (it was acknowledged as a duplicate, and its round waited for a
    verdict until its deadline)."""
    base, primary, check, tie = await _checked_by_a_lazy_peer(platform)
    await record(platform.log, tie)  # appended; not delivered here yet
    await platform.upload(tie, _honest(base, noise=1e-6))
    *_, accepted, a, b = await platform.model_events()
    assert isinstance(accepted, UpdateAccepted) and accepted.task_id == tie.task_id
    assert isinstance(a, UpdateChecked) and isinstance(b, UpdateChecked)
    assert {a.task_id: a.agree, b.task_id: b.agree} == {
        primary.task_id: True,
        check.task_id: False,
    }


def _accepted(t: TaskAssigned, norm: float) -> UpdateAccepted:
    return UpdateAccepted(
        job_id=JOB,
        round=t.round,
        attempt=t.attempt,
        shard=t.shard,
        task_id=t.task_id,
        peer_id=t.peer_id,
        key=f"k-{t.task_id}",
        sha256="0" * 64,
        size=1,
        norm=norm,
        weight=1.0,
        checks=t.checks,
    )


def test_two_all_zero_updates_never_confirm_each_other_and_inf_is_recorded_finite() -> None:
    state = JobMemory(JOB)
    primary = task(0, "p0")
    check = _check(primary, "p1", n=2)
    state.tasks = {primary.task_id: primary, check.task_id: check}
    state.checks_of = {primary.task_id: [check.task_id]}
    a, b = _accepted(primary, 0.0), _accepted(check, 0.0)
    state.by_task[a.task_id] = a
    assert partners(state, b) == [a]
    assert not verdict(state, b, a, 0.0, 1e-3).agree
    far = verdict(state, _accepted(check, 1.0), _accepted(primary, 1.0), math.inf, 1e-3)
    assert far.distance == MAX_DISTANCE and not far.agree
    assert partners(state, _accepted(task(1, "p2", n=4), 1.0)) == []  # in no group
