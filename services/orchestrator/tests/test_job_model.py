"""``GET /api/jobs/{id}/model``: the job's model summarised for its data."""

from __future__ import annotations

from typing import Any

import pytest

from peertrain.common.app import Ports
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events import NewEvent
from peertrain.common.events.datasets import FeatureSpec
from peertrain.common.events.training import JobCreated, ShardingSpec
from peertrain.orchestrator.application import OrchestratorApp
from peertrain.orchestrator.domain import Job
from peertrain.orchestrator.domain.directory import DatasetInfo
from peertrain.orchestrator.domain.errors import DatasetNotFound
from peertrain.orchestrator.usecases.jobs import job_model

IMAGES = {
    "kind": "images",
    "input_shape": [3, 32, 32],
    "input_size": 3 * 32 * 32,
    "classes": [str(i) for i in range(10)],
    "image": {
        "mode": "RGB",
        "channels": 3,
        "height": 32,
        "width": 32,
        "mean": [0.5, 0.5, 0.5],
        "std": [0.25, 0.25, 0.25],
    },
    "label_column": "folder",
}


def created_job(model: dict[str, Any]) -> Job:
    job = Job("j1")
    created = JobCreated(
        job_id="j1",
        owner_id="u1",
        name="test",
        dataset_id="d1",
        peers=("p0",),
        sharding=ShardingSpec(),
        model=model,
        training={"rounds": 1, "seed": 1},
        aggregation={},
    )
    job.apply(NewEvent.of(created, producer="test").stored_as("job:j1", 1, 1))
    return job


def context(feature_spec: dict[str, Any] | None) -> OrchestratorApp:
    app = OrchestratorApp(Ports(log=MemoryEventLog()))
    if feature_spec is not None:
        app.directory.datasets["d1"] = DatasetInfo(
            "d1",
            owner_id="u1",
            state="validated",
            feature_spec=FeatureSpec.model_validate(feature_spec),
            train_rows=10,
        )
    return app


def test_before_sharding_a_named_architecture_is_summarised_for_the_datasets_images() -> None:
    job = created_job({"arch": "torchvision", "name": "resnet18", "cifar_stem": True})
    summary = job_model(context(IMAGES), job)
    assert (summary.arch, summary.name, summary.input_shape) == (
        "torchvision",
        "resnet18",
        (3, 32, 32),
    )
    assert summary.layers[0].module == "conv1" and summary.layers[0].output == "[N, 64, 32, 32]"
    assert summary.layers[-1].output == "[N, 10]"
    assert summary.parameters == sum(row.parameters for row in summary.layers)


def test_a_job_whose_dataset_is_unknown_answers_dataset_not_found() -> None:
    with pytest.raises(DatasetNotFound):
        job_model(context(None), created_job({"arch": "logreg"}))
