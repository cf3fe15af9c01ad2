"""The job request's specs are typed: a bad one is a 422 in the one error shape, naming
where the problem is; a good one reaches ``job.created`` parsed, defaults filled in once."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from peertrain.common.app import install_error_handlers
from peertrain.common.specs import AggregationSpec, MLPSpec, TrainingParams
from peertrain.common.text import NO_NUL
from peertrain.orchestrator.domain.job_request import JobRequest


def _app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/jobs")
    async def create(body: JobRequest) -> dict[str, Any]:
        return body.model_dump(mode="json")

    return app


client = TestClient(_app())
BASE = {"name": "j", "dataset_id": "d1", "peers": ["p1"]}


@pytest.mark.parametrize(
    ("block", "loc"),
    [
        ({"model": {"arch": "mlp", "hidden": [0]}}, ["body", "model", "hidden", 0]),
        ({"model": {"arch": "transformer"}}, ["body", "model", "arch"]),
        ({"model": {"hidden": [8]}}, ["body", "model", "arch"]),
        ({"model": {"arch": "cnn", "kernel_size": 4}}, ["body", "model", "kernel_size"]),
        ({"training": {"rounds": 0}}, ["body", "training", "rounds"]),
        ({"training": {"epochs": 3}}, ["body", "training", "epochs"]),
        ({"aggregation": {"strategy": "krum"}}, ["body", "aggregation", "strategy"]),
        # text the store cannot hold (a NUL) never reaches a write or a lookup
        ({"name": "a\x00b"}, ["body", "name"]),
        ({"dataset_id": "d1\x00"}, ["body", "dataset_id"]),
        ({"peers": ["p1", "\x00"]}, ["body", "peers", 1]),
        ({"init_from": {"job_id": "j\x00"}}, ["body", "init_from", "job_id"]),
    ],
)
def test_a_bad_spec_is_refused_where_it_is_wrong(block: dict[str, Any], loc: list[Any]) -> None:
    r = client.post("/jobs", json={**BASE, **block})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "validation_failed"
    assert loc in [d["loc"] for d in error["detail"]]


def test_the_specs_are_parsed_once_with_their_defaults() -> None:
    r = client.post("/jobs", json=BASE)
    assert r.status_code == 200, r.text
    request = JobRequest.model_validate(BASE)
    assert request.model == MLPSpec(arch="mlp")
    assert request.training == TrainingParams()
    assert request.aggregation == AggregationSpec()
    assert r.json()["model"] == {
        "arch": "mlp",
        "hidden": [128],
        "dropout": 0.0,
        "activation": "relu",
    }


def test_the_openapi_document_shows_the_spec_schemas() -> None:
    schema = _app().openapi()["components"]["schemas"]
    model = schema["JobRequest"]["properties"]["model"]
    assert model["discriminator"]["propertyName"] == "arch"
    assert {"LogRegSpec", "MLPSpec", "CNNSpec", "TrainingParams", "AggregationSpec"} <= set(schema)
    assert schema["JobRequest"]["properties"]["name"]["pattern"] == NO_NUL
