"""A task message carries the dataset's feature spec typed, with the JSON it always had."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from peertrain.common.events.datasets import FeatureSpec
from peertrain.common.events.tasks import TaskMessage
from peertrain.common.specs import DataShape

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
