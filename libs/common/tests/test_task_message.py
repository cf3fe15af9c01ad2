"""A task message carries the dataset's feature spec typed, with the JSON it always had."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from peertrain.common.events.datasets import FeatureSpec
from peertrain.common.events.tasks import TaskMessage
from peertrain.common.specs import DataShape
from peertrain.testkit.common.features import table_features

SPEC: dict[str, Any] = {
    "kind": "table",
    "input_shape": [3],
    "input_size": 3,
    "classes": ["a", "b"],
    "columns": [{"name": "x", "type": "numeric", "offset": 0, "width": 3}],
    "label_column": "y",
}


def _wire(feature_spec: dict[str, Any]) -> dict[str, Any]:
    dl = {"url": "http://s/x", "sha256": "0" * 64, "size": 1, "key": "k"}
    return {
        "type": "task",
        "task_id": "t1",
        "job_id": "j1",
        "round": 1,
        "attempt": 1,
        "shard": 0,
        "deadline": datetime(2026, 1, 1, tzinfo=UTC).isoformat(),
        "model_version": 0,
        "model": dl,
        "data": dl,
        "upload": {"url": "http://s/", "fields": {}, "key": "u", "max_bytes": 10},
        "model_spec": {"arch": "mlp", "hidden": [4]},
        "feature_spec": feature_spec,
        "training": {},
        "seed": 1,
    }


def test_the_feature_spec_is_parsed_once_into_the_datasets_type() -> None:
    dumped = FeatureSpec.model_validate(SPEC).model_dump(mode="json")
    task = TaskMessage.model_validate_json(json.dumps(_wire(dumped)))
    assert isinstance(task.feature_spec, FeatureSpec)
    assert task.feature_spec.data_shape == DataShape(input_size=3, num_classes=2)


def test_the_json_is_what_a_dict_field_sent() -> None:
    """What the orchestrator sent when the field was a dict (the spec's JSON dump) is
    read, and written again the same."""
    dumped = FeatureSpec.model_validate(SPEC).model_dump(mode="json")
    task = TaskMessage.model_validate_json(json.dumps(_wire(dumped)))
    assert json.loads(task.model_dump_json())["feature_spec"] == dumped


def _mnist_wire() -> dict[str, Any]:
    return _wire(table_features(784, 10).model_dump(mode="json"))


def _put(tree: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        tree = tree[step]
    tree[path[-1]] = value


@pytest.mark.parametrize(
    "path",
    [
        ("job_id",),
        ("model", "key"),
        ("upload", "fields", "policy"),
        ("model_spec", "arch"),
        ("feature_spec", "columns", 783, "name"),
        ("feature_spec", "classes", 9),
        ("training", "optimizer"),
        ("ignored",),
    ],
)
def test_a_nul_anywhere_in_a_task_is_refused_from_json_and_from_python(
    path: tuple[Any, ...],
) -> None:
    """The check on the JSON body (once per message) and the walk of the decoded input
    (Python) both refuse it, in a field, a nested model, a list or a field nobody reads."""
    wire = _mnist_wire()
    _put(wire, path, "x\x00y")
    with pytest.raises(ValidationError, match="NUL"):
        TaskMessage.model_validate_json(json.dumps(wire))
    with pytest.raises(ValidationError, match="NUL"):
        TaskMessage.model_validate_json(json.dumps(wire).encode())
    with pytest.raises(ValidationError, match="NUL"):
        TaskMessage.model_validate(wire)


def test_a_nul_in_a_key_is_refused() -> None:
    wire = _mnist_wire()
    wire["upload"]["fields"]["k\x00"] = "v"
    with pytest.raises(ValidationError, match="NUL"):
        TaskMessage.model_validate_json(json.dumps(wire))


def test_the_text_of_an_escape_is_not_a_nul() -> None:
    """A backslash before ``u0000`` in a text is written ``\\\\u0000`` in the body: six
    characters of text, not a NUL (the body is walked, and the task accepted)."""
    wire = _mnist_wire()
    wire["job_id"] = "a\\u0000b"
    body = json.dumps(wire)
    assert "\\u0000" in body
    assert TaskMessage.model_validate_json(body).job_id == "a\\u0000b"


def test_a_task_carries_the_spec_without_its_columns_and_a_peer_reads_it() -> None:
    """A wide table's columns made every task message grow with its width; the copy a
    task carries sizes the same model and reads back from the wire."""
    wide = table_features(784, 10)
    sent = wide.for_peers()
    assert sent.columns == () and wide.columns  # the job's own spec keeps them
    assert sent.model_dump(exclude={"columns"}) == wide.model_dump(exclude={"columns"})
    wire = json.dumps(_wire(sent.model_dump(mode="json")))
    assert len(wire) < 2_000 < len(json.dumps(_wire(wide.model_dump(mode="json"))))
    task = TaskMessage.model_validate_json(wire)
    assert task.feature_spec == sent
    shape = DataShape(input_size=784, num_classes=10)
    assert task.feature_spec.data_shape == wide.data_shape == shape


def test_columns_that_do_not_give_the_input_size_are_still_refused() -> None:
    with pytest.raises(ValidationError, match="columns give 1 features, input_size is 3"):
        FeatureSpec.model_validate({**SPEC, "columns": [SPEC["columns"][0] | {"width": 1}]})
