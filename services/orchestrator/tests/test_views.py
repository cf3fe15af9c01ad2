"""The jobs API's answers, built from a folded job (the wire shape is the models')."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.models import ModelEvaluated, ModelVersionCreated, UpdateAccepted
from peertrain.common.events.training import (
    IncludedUpdate,
    JobCreated,
    RoundClosed,
    RoundOpened,
    ShardingSpec,
    TaskAssigned,
)
from peertrain.common.specs import (
    MLPSpec,
    TrainingParams,
)
from peertrain.orchestrator.api.views import EventPublic, JobDetail, JobMetrics, JobSummary
from peertrain.orchestrator.domain import Job

LATER = datetime.now(UTC) + timedelta(hours=1)
CREATED = JobCreated(
    job_id="j1",
    owner_id="u1",
    name="test",
    dataset_id="d1",
    peers=("p0", "p1"),
    sharding=ShardingSpec(),
    model={"arch": "mlp", "hidden": [16]},
    training={"rounds": 3, "seed": 1},
    aggregation={"min_peers": 2},
)


def recorded(stream: str, *data: EventData, first: int = 1) -> list[RecordedEvent]:
    new = [NewEvent.of(d, producer="orchestrator") for d in data]
    return [e.stored_as(stream, seq, seq) for seq, e in enumerate(new, first)]


def folded(created: JobCreated) -> Job:
    job = Job("j1")
    opened = RoundOpened(
        job_id="j1",
        round=1,
        attempt=1,
        model_version=0,
        model_key="m",
        model_sha256="0" * 64,
        deadline=LATER,
    )
    assigned = TaskAssigned(
        job_id="j1",
        task_id="t0",
        round=1,
        attempt=1,
        shard=0,
        peer_id="p0",
        update_key="u",
        deadline=LATER,
    )
    for event in recorded("job:j1", created, opened, assigned):
        job.apply(event)
    job.evaluations[0] = ModelEvaluated(job_id="j1", version=0, loss=2.0, accuracy=0.1, samples=5)
    return job


def test_job_detail_carries_the_typed_specs_of_job_created() -> None:
    detail = JobDetail.of(folded(CREATED))
    assert detail.model == MLPSpec(arch="mlp", hidden=(16,))
    assert detail.training == TrainingParams(rounds=3, seed=1)
    assert (detail.training.rounds, detail.aggregation.min_peers) == (3, 2)


def test_job_answers_keep_their_wire_fields() -> None:
    job = folded(CREATED)
    detail = JobDetail.of(job).model_dump(mode="json")
    assert detail["peers"] == ["p0", "p1"] and detail["current_round"] == 1
    assert detail["round"]["accepted"] == [] and [t["task_id"] for t in detail["tasks"]] == ["t0"]
    assert detail["latest"] == {"round": 0, "version": 0, "loss": 2.0, "accuracy": 0.1}
    assert detail["model"] == {"arch": "mlp", "hidden": [16], "dropout": 0.0, "activation": "relu"}
    summary = JobSummary.of(job).model_dump(mode="json")
    assert summary["peers"] == 2 and summary["rounds"] == 3 and summary["accuracy"] == 0.1
    assert set(summary) < set(detail)
    metrics = JobMetrics.of(job).model_dump(mode="json")
    assert metrics == {
        "job_id": "j1",
        "compression": "none",
        "initial": {"version": 0, "loss": 2.0, "accuracy": 0.1},
        "rounds": [],
        "peers": [],
    }
    [event] = recorded("job:j1", CREATED)
    assert EventPublic.of(event).data == CREATED.model_dump(mode="json")


def test_job_metrics_say_what_each_round_moved() -> None:
    job = folded(CREATED)
    version = {"key": "m", "sha256": "0" * 64, "strategy": "fedavg"}
    accepted = UpdateAccepted(
        job_id="j1",
        round=1,
        attempt=1,
        shard=0,
        task_id="t0",
        peer_id="p0",
        key="a",
        sha256="1" * 64,
        size=300,
        norm=1.0,
        weight=5.0,
        compression="int8",
        dense_size=1000,
    )
    inc = IncludedUpdate(shard=0, peer_id="p0", task_id="t0", key="a", sha256="1" * 64)
    closed = RoundClosed(job_id="j1", round=1, attempt=1, reason="complete", included=(inc,))
    v0 = ModelVersionCreated(job_id="j1", version=0, size=1200, **version)
    v1 = ModelVersionCreated(job_id="j1", version=1, size=1200, **version)
    for event in [*recorded("model:j1", v0, accepted, v1), *recorded("job:j1", closed, first=4)]:
        job.apply(event)
    job.evaluations[1] = ModelEvaluated(job_id="j1", version=1, loss=1.0, accuracy=0.5, samples=5)
    [rnd] = JobMetrics.of(job).rounds
    assert (rnd.bytes_up, rnd.bytes_up_dense, rnd.bytes_down_per_peer) == (300, 1000, 1200)
    old = accepted.model_copy(update={"compression": None, "dense_size": None})
    job = folded(CREATED)
    for event in [*recorded("model:j1", v0, old, v1), *recorded("job:j1", closed, first=4)]:
        job.apply(event)  # an update.accepted from before compression
    job.evaluations[1] = ModelEvaluated(job_id="j1", version=1, loss=1.0, accuracy=0.5, samples=5)
    [rnd] = JobMetrics.of(job).rounds
    assert (rnd.bytes_up, rnd.bytes_up_dense) == (300, None)
