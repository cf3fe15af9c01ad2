"""When a held job's state says something it waits for was lost on the way here."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from peertrain.aggregator.domain import JobMemory
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events.models import ModelDiverged, ModelEvaluated, ModelVersionCreated
from peertrain.common.events.training import IncludedUpdate, JobFailed, RoundClosed

from .conftest import JOB, SHA, record

GRACE = timedelta(seconds=30)


def _version(log: MemoryEventLog, v: int) -> ModelVersionCreated:
    return ModelVersionCreated(job_id=JOB, version=v, key=f"v{v}", sha256=SHA, size=1, strategy="x")


async def _assessed(state: JobMemory, log: MemoryEventLog) -> None:
    state.apply(await record(log, _version(log, 0), model=True))
    state.apply(
        await record(
            log,
            ModelEvaluated(job_id=JOB, version=0, loss=2.3, accuracy=0.1, samples=5),
            model=True,
        )
    )


async def test_a_round_open_past_its_deadline_and_the_grace_looks_stalled(
    running: tuple[JobMemory, MemoryEventLog],
) -> None:
    state, log = running
    await _assessed(state, log)
    deadline = state.opened[(1, 1)].deadline
    assert not state.stalled(datetime.now(UTC), GRACE)  # open, before its deadline
    assert not state.stalled(deadline + GRACE, GRACE)
    assert state.stalled(deadline + GRACE + timedelta(seconds=1), GRACE)  # its close lost?
    state.apply(await record(log, JobFailed(job_id=JOB, code="x", reason="y")))
    assert not state.stalled(deadline + 2 * GRACE, GRACE)  # ended: nothing to wait for


async def test_model_work_not_done_looks_stalled_and_a_diverged_version_counts_as_assessed(
    running: tuple[JobMemory, MemoryEventLog],
) -> None:
    state, log = running
    now = datetime.now(UTC)
    state.apply(await record(log, _version(log, 0), model=True))
    assert state.stalled(now, GRACE)  # v0 not evaluated
    state.apply(await record(log, ModelDiverged(job_id=JOB, version=0, reason="nan"), model=True))
    assert not state.stalled(now, GRACE) and state.diverged
    closed = RoundClosed(
        job_id=JOB,
        round=1,
        attempt=1,
        reason="complete",
        included=(IncludedUpdate(shard=0, peer_id="p0", task_id="t", key="k", sha256=SHA),),
    )
    state.apply(await record(log, closed))
    assert state.stalled(now, GRACE)  # a closed round without its version
