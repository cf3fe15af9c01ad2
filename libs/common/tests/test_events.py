"""The envelope and its one serializer (pure: no stack needed)."""

from __future__ import annotations

import json

import pytest

from peertrain.common.events import (
    MalformedEvent,
    NewEvent,
    RawData,
    RecordedEvent,
    UnknownEventType,
    catalogue,
    decode_message,
    from_document,
    to_document,
    to_message,
)
from peertrain.common.events.diagnostics import DIAGNOSTIC_PINGED, DiagnosticPinged
from peertrain.common.events.training import JOB_CREATED, JobCreated
from peertrain.common.specs import MLPSpec, TrainingParams


def recorded(data: DiagnosticPinged, **extra: object) -> RecordedEvent:
    new = NewEvent.of(data, producer="test", actor="u1", correlation_id="job-1")
    fields = new.model_dump(exclude={"data"}) | {"stream": "s:1", "seq": 1, "position": 7}
    return RecordedEvent(**(fields | extra), data=new.data)


def test_message_round_trip_keeps_the_typed_payload() -> None:
    event = recorded(DiagnosticPinged(n=3, note="x"))
    back = decode_message(to_message(event))
    assert back == event
    assert isinstance(back.data, DiagnosticPinged)


def test_document_round_trip() -> None:
    event = recorded(DiagnosticPinged(n=1))
    assert from_document(to_document(event)) == event


def test_causation_carries_correlation_forward() -> None:
    parent = recorded(DiagnosticPinged(n=1))
    child = NewEvent.of(DiagnosticPinged(n=2), producer="t", causation=parent)
    assert child.causation_id == parent.id
    assert child.correlation_id == "job-1"


def test_ids_are_time_ordered_uuid7() -> None:
    a, b = (
        NewEvent.of(DiagnosticPinged(), producer="t"),
        NewEvent.of(DiagnosticPinged(), producer="t"),
    )
    assert a.id[14] == "7" and a.id < b.id


def test_catalogue_names_every_family() -> None:
    names = catalogue()
    assert names[DIAGNOSTIC_PINGED] is DiagnosticPinged
    assert names[JOB_CREATED] is JobCreated
    assert all("." in n for n in names)


def test_unknown_type_is_kept_raw_when_read_from_the_log() -> None:
    doc = to_document(recorded(DiagnosticPinged()))
    doc["type"] = "future.happened"
    doc["data"] = {"anything": 1}
    event = from_document(doc)
    assert isinstance(event.data, RawData)


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[1, 2]", b'{"no": "type"}', b'{"type": "diagnostic.pinged", "data": {}}'],
)
def test_malformed_bodies_are_refused(body: bytes) -> None:
    with pytest.raises(MalformedEvent):
        decode_message(body)


def test_bad_payload_is_refused() -> None:
    body = json.loads(to_message(recorded(DiagnosticPinged())))
    body["data"] = {"n": "not a number"}
    with pytest.raises(MalformedEvent):
        decode_message(json.dumps(body).encode())


def test_unknown_type_on_the_bus_is_refused() -> None:
    body = json.loads(to_message(recorded(DiagnosticPinged())))
    body["type"] = "nobody.knows"
    with pytest.raises(UnknownEventType):
        decode_message(json.dumps(body).encode())


def test_unregistered_payload_cannot_be_wrapped() -> None:
    from peertrain.common.events import EventData

    class Loose(EventData):
        x: int = 1

    with pytest.raises(TypeError):
        NewEvent.of(Loose(), producer="t")


def test_a_diverged_peers_progress_parses_with_null_metrics() -> None:
    from peertrain.common.events.tasks import TaskProgressBody

    body = TaskProgressBody(
        task_id="t", job_id="j", round=1, attempt=1, shard=0, epoch=1, epochs=1,
        loss=float("nan"), accuracy=0.1, samples=10, duration_s=0.5,
    )  # fmt: skip
    wire = body.model_dump_json()  # NaN goes out as null
    assert TaskProgressBody.model_validate_json(wire).loss is None


def test_a_job_created_stored_with_plain_blocks_reads_typed_and_writes_a_superset() -> None:
    # What the orchestrator stored before the specs were typed: validated blocks as JSON
    # (and, in tests, the old ``{}`` default for the model).
    stored = {
        "job_id": "j1",
        "owner_id": "u1",
        "name": "n",
        "dataset_id": "d1",
        "peers": ["p1"],
        "model": {"arch": "mlp", "hidden": [16]},
        "training": {"rounds": 3, "seed": 7},
        "aggregation": {"strategy": "fedprox"},
    }
    created = JobCreated.model_validate_json(json.dumps(stored))
    assert isinstance(created.model, MLPSpec) and created.model.hidden == (16,)
    assert created.training.rounds == 3 and created.training.local_epochs == 1
    assert created.aggregation.strategy == "fedprox"
    written = created.model_dump(mode="json")
    for block in ("model", "training", "aggregation"):
        assert stored[block].items() <= written[block].items()
    legacy = JobCreated.model_validate(stored | {"model": {}, "training": {}})
    assert legacy.model == MLPSpec(arch="mlp") and legacy.training == TrainingParams()
