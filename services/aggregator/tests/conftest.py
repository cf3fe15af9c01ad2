"""Builders for the aggregator's unit tests (no stack needed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from peertrain.aggregator.domain import JobMemory
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.datasets import ArtifactRef, ColumnEncoding, FeatureSpec
from peertrain.common.events.models import model_stream
from peertrain.common.events.tasks import UpdateAnnounced
from peertrain.common.events.training import (
    JobConfigured,
    JobCreated,
    RoundOpened,
    ShardPlan,
    TaskAssigned,
    job_stream,
    update_key,
)

JOB = "job1"
SHA = "0" * 64
FEATURES = FeatureSpec(
    kind="table",
    input_shape=(6,),
    input_size=6,
    classes=("a", "b", "c"),
    columns=tuple(
        ColumnEncoding(name=f"x{i}", type="numeric", offset=i, width=1, fill=0, mean=0, std=1)
        for i in range(6)
    ),
    label_column="y",
)


def configured(
    *, rows: tuple[int, ...] = (30, 50), aggregation: dict[str, Any] | None = None, rounds: int = 2
) -> JobConfigured:
    return JobConfigured(
        job_id=JOB,
        config_key=f"jobs/{JOB}/config.json",
        config_sha256=SHA,
        rounds=rounds,
        model={"arch": "mlp", "hidden": [8]},
        training={"seed": 3, "lr": 0.1},
        aggregation=aggregation or {"strategy": "fedavg"},
        feature_spec=FEATURES,
        shards=tuple(
            ShardPlan(index=i, peer_id=f"p{i}", key=f"s{i}", sha256=SHA, size=1, rows=r)
            for i, r in enumerate(rows)
        ),
        holdout=ArtifactRef(key=f"jobs/{JOB}/holdout.npz", sha256=SHA, size=1),
        reference_weight=float(sum(rows)),
    )


async def record(log: MemoryEventLog, data: EventData, *, model: bool = False) -> RecordedEvent:
    """``data`` appended to the job's stream (``model``: its model stream), as stored."""
    stream = model_stream(JOB) if model else job_stream(JOB)
    producer = "aggregator" if model else "orchestrator"
    new = NewEvent.of(data, producer=producer)
    [event] = await log.append(stream, [new], expected_version=await log.stream_version(stream))
    return event


def task(shard: int, peer: str, *, round_: int = 1, attempt: int = 1, n: int = 1) -> TaskAssigned:
    return TaskAssigned(
        job_id=JOB,
        task_id=f"{JOB}.{round_}.{attempt}.{shard}.{n}",
        round=round_,
        attempt=attempt,
        shard=shard,
        peer_id=peer,
        update_key=update_key(JOB, round_, attempt, shard, peer),
        deadline=datetime.now(UTC) + timedelta(minutes=5),
    )


def opened(round_: int = 1, attempt: int = 1) -> RoundOpened:
    return RoundOpened(
        job_id=JOB,
        round=round_,
        attempt=attempt,
        model_version=round_ - 1,
        model_key=f"models/{JOB}/v{round_ - 1}.safetensors",
        model_sha256=SHA,
        deadline=datetime.now(UTC) + timedelta(minutes=5),
    )


def announce(t: TaskAssigned, **change: Any) -> UpdateAnnounced:
    fields: dict[str, Any] = {
        "task_id": t.task_id,
        "job_id": t.job_id,
        "round": t.round,
        "attempt": t.attempt,
        "shard": t.shard,
        "key": t.update_key,
        "sha256": SHA,
        "size": 10,
        "samples": 999,
    }
    fields.update(change)
    return UpdateAnnounced(**fields)


@pytest.fixture
async def running() -> tuple[JobMemory, MemoryEventLog]:
    """A configured job with round 1 open and shards 0, 1 assigned to p0, p1."""
    log, state = MemoryEventLog(), JobMemory(JOB)
    for data in (
        JobCreated(job_id=JOB, owner_id="u1", name="n", dataset_id="d", peers=("p0", "p1")),
        configured(),
        opened(),
        task(0, "p0"),
        task(1, "p1"),
    ):
        state.apply(await record(log, data))
    return state, log
