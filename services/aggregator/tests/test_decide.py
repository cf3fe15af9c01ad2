"""Deciding about announced updates from a job's folded state."""

from __future__ import annotations

from peertrain.aggregator.domain import Candidate, Duplicate, Ignored, JobMemory, Refusal, codes
from peertrain.aggregator.domain.decide import MAX_STRIKES_RECORDED, decide_update
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events.models import UpdateAccepted, UpdateRejected
from peertrain.common.events.training import (
    IncludedUpdate,
    JobCancelled,
    PeerExcluded,
    RoundClosed,
    TaskLost,
)

from .conftest import JOB, SHA, announce, record, task


async def _accept(state: JobMemory, log: MemoryEventLog, shard: int, peer: str) -> None:
    t = task(shard, peer)
    state.apply(
        await record(
            log,
            UpdateAccepted(
                job_id=JOB,
                round=1,
                attempt=1,
                shard=shard,
                task_id=t.task_id,
                peer_id=peer,
                key=t.update_key,
                sha256=SHA,
                size=10,
                norm=1.0,
                weight=30,
            ),
            model=True,
        )
    )


async def test_a_good_announcement_is_a_candidate_weighted_by_the_shard_rows(running):
    state, _ = running
    decision = decide_update(state, "p1", announce(task(1, "p1")))
    assert isinstance(decision, Candidate)
    assert decision.weight == 50.0  # the shard's rows, never the claimed 999
    assert decision.opened.model_version == 0


async def test_unknown_job_is_ignored():
    assert isinstance(decide_update(JobMemory("other"), "p0", announce(task(0, "p0"))), Ignored)


async def test_refusals(running):
    state, log = running
    t0 = task(0, "p0")
    cases = {
        codes.WRONG_PEER: ("p1", announce(t0)),
        codes.UNKNOWN_TASK: ("p0", announce(t0, task_id="nope")),
        codes.TASK_MISMATCH: ("p0", announce(t0, shard=1)),
        codes.WRONG_KEY: ("p0", announce(t0, key="jobs/job1/elsewhere")),
    }
    for code, (peer, body) in cases.items():
        decision = decide_update(state, peer, body)
        assert isinstance(decision, Refusal) and decision.code == code, (code, decision)
    state.apply(
        await record(
            log,
            TaskLost(
                job_id=JOB,
                task_id=t0.task_id,
                round=1,
                shard=0,
                peer_id="p0",
                reason="peer_offline",
            ),
        )
    )
    decision = decide_update(state, "p0", announce(t0))
    assert isinstance(decision, Refusal) and decision.code == codes.TASK_LOST


async def test_closed_round_refuses_and_an_ended_job_records_nothing(running):
    state, log = running
    t1 = task(1, "p1")
    inc = IncludedUpdate(shard=0, peer_id="p0", task_id="x", key="k", sha256=SHA)
    state.apply(
        await record(
            log, RoundClosed(job_id=JOB, round=1, attempt=1, reason="deadline", included=(inc,))
        )
    )
    decision = decide_update(state, "p1", announce(t1))
    assert isinstance(decision, Refusal) and decision.code == codes.ROUND_NOT_OPEN
    state.apply(await record(log, JobCancelled(job_id=JOB, by="u1")))
    decision = decide_update(state, "p1", announce(t1))
    assert isinstance(decision, Ignored)  # a peer cannot grow an ended job's log


async def _strike(state: JobMemory, log: MemoryEventLog, peer: str, n: int) -> None:
    state.apply(
        await record(
            log,
            UpdateRejected(
                job_id=JOB,
                round=1,
                attempt=1,
                task_id=f"guess{n}",
                peer_id=peer,
                code=codes.UNKNOWN_TASK,
                reason="never assigned",
                strike=True,
            ),
            model=True,
        )
    )


async def test_only_the_jobs_peers_get_refusals_recorded_and_only_so_many(running):
    state, log = running
    # a peer of another job (or none) naming this job: counted and dropped, not recorded
    assert isinstance(decide_update(state, "stranger", announce(task(0, "p0"))), Ignored)
    # the job's own peer guessing task ids: recorded, up to a cap
    for n in range(MAX_STRIKES_RECORDED):
        assert isinstance(
            decide_update(state, "p1", announce(task(0, "p0"), task_id=f"g{n}")), Refusal
        )
        await _strike(state, log, "p1", n)
    assert isinstance(decide_update(state, "p1", announce(task(0, "p0"), task_id="more")), Ignored)
    # an excluded peer's announcements are not recorded either
    state.apply(await record(log, PeerExcluded(job_id=JOB, peer_id="p0", strikes=3, reason="r")))
    assert isinstance(decide_update(state, "p0", announce(task(0, "p0"))), Ignored)


async def test_second_update_for_a_shard_or_task_is_a_duplicate(running):
    state, log = running
    await _accept(state, log, 0, "p0")
    assert isinstance(decide_update(state, "p0", announce(task(0, "p0"))), Duplicate)
    # a reassigned task for the same shard: still one update per (round, attempt, shard)
    other = task(0, "p1", n=2)
    state.apply(await record(log, other))
    assert isinstance(decide_update(state, "p1", announce(other)), Duplicate)
    # a rejected task is decided too: a redelivery records nothing new
    t1 = task(1, "p1")
    state.apply(
        await record(
            log,
            UpdateRejected(
                job_id=JOB,
                round=1,
                attempt=1,
                shard=1,
                task_id=t1.task_id,
                peer_id="p1",
                code="x",
                reason="y",
            ),
            model=True,
        )
    )
    assert isinstance(decide_update(state, "p1", announce(t1)), Duplicate)


async def test_state_tracks_positions_and_rounds_to_aggregate(running):
    state, log = running
    assert (state.job_seq, state.model_seq) == (5, 0)
    assert state.owner_id == "u1" and state.is_open(1, 1)
    inc = IncludedUpdate(shard=0, peer_id="p0", task_id="x", key="k", sha256=SHA)
    state.apply(
        await record(
            log, RoundClosed(job_id=JOB, round=1, attempt=1, reason="complete", included=(inc,))
        )
    )
    assert [c.round for c in state.rounds_to_aggregate()] == [1]
    assert not state.is_open(1, 1)


async def test_a_spoofed_announcement_does_not_block_the_real_one(running):
    state, log = running
    t0 = task(0, "p0")
    state.apply(
        await record(
            log,
            UpdateRejected(
                job_id=JOB,
                round=1,
                attempt=1,
                shard=0,
                task_id=t0.task_id,
                peer_id="p1",
                code=codes.WRONG_PEER,
                reason="not yours",
            ),
            model=True,
        )
    )
    assert isinstance(decide_update(state, "p1", announce(t0)), Duplicate)
    assert isinstance(decide_update(state, "p0", announce(t0)), Candidate)


async def test_an_excluded_peers_accepted_update_leaves_the_round(running):
    state, log = running
    await _accept(state, log, 0, "p0")
    state.apply(
        await record(
            log,
            TaskLost(
                job_id=JOB,
                task_id=task(0, "p0").task_id,
                round=1,
                shard=0,
                peer_id="p0",
                reason="excluded",
            ),
        )
    )
    again = task(0, "p1", n=2)
    state.apply(await record(log, again))
    assert isinstance(decide_update(state, "p1", announce(again)), Candidate)


async def test_a_surplus_task_s_late_update_is_refused_without_a_strike(running):
    """Over-selection: the round closed without it and its task was ended as surplus."""
    state, log = running
    t1 = task(1, "p1")
    lost = TaskLost(
        job_id=JOB, task_id=t1.task_id, round=1, shard=1, peer_id="p1", reason="surplus"
    )
    state.apply(await record(log, lost))
    decision = decide_update(state, "p1", announce(t1))
    assert isinstance(decision, Refusal) and decision.code == codes.TASK_LOST
    assert decision.code not in codes.STRIKES
