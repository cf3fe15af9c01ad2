"""Every service's OpenAPI document is the wire: answers typed, errors in the one shape.

Built from the apps themselves (no stack needed: nothing connects until start-up).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from peertrain.aggregator.app import create_aggregator_app
from peertrain.auth.app import create_auth_app
from peertrain.dataset.app import create_dataset_app
from peertrain.orchestrator.app import create_orchestrator_app
from peertrain.registry.app import create_registry_app

APPS: dict[str, Callable[[], FastAPI]] = {
    "auth": create_auth_app,
    "registry": create_registry_app,
    "dataset": create_dataset_app,
    "orchestrator": create_orchestrator_app,
    "aggregator": create_aggregator_app,
}
ERROR_REF = "#/components/schemas/ErrorResponse"
Operation = tuple[str, str, dict[str, Any]]


@pytest.fixture(scope="module", params=sorted(APPS))
def document(request: pytest.FixtureRequest) -> dict[str, Any]:
    return APPS[request.param]().openapi()


def operations(doc: dict[str, Any]) -> Iterator[Operation]:
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            yield method.upper(), path, op


def test_no_route_documents_fastapis_validation_error(document: dict[str, Any]) -> None:
    text = json.dumps(document)
    assert "HTTPValidationError" not in text and '"ValidationError"' not in text


def test_every_operation_says_what_it_answers(document: dict[str, Any]) -> None:
    for method, path, op in operations(document):
        ok = {s: r for s, r in op["responses"].items() if s.startswith("2")}
        assert ok, f"{method} {path}: no 2xx answer"
        for status, response in ok.items():
            content = response.get("content") or {}
            if status == "204":
                assert not content, f"{method} {path}: 204 with a body"
                continue
            assert content, f"{method} {path}: {status} documents no body"
            for media, body in content.items():
                if media == "application/json":
                    schema = body.get("schema") or {}
                    assert schema not in ({}, {"title": "Response"}), (
                        f"{method} {path}: {status} has no schema"
                    )


def test_every_error_is_the_one_shape(document: dict[str, Any]) -> None:
    for method, path, op in operations(document):
        for status, response in op["responses"].items():
            if status[0] in "45":
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": ERROR_REF}, f"{method} {path}: {status} is {schema}"


def test_every_api_route_documents_the_errors_it_can_answer(document: dict[str, Any]) -> None:
    for method, path, op in operations(document):
        if path in ("/healthz", "/readyz"):
            continue
        statuses = set(op["responses"])
        assert {"422", "503"} <= statuses, f"{method} {path}: {sorted(statuses)}"
        if op.get("security"):
            assert "401" in statuses, f"{method} {path}: authenticated, 401 not documented"
        if "{" in path:
            assert "404" in statuses, f"{method} {path}: has an id, 404 not documented"


def test_job_creation_documents_its_dry_run_and_the_job_schema_is_published() -> None:
    doc = create_orchestrator_app().openapi()
    create = doc["paths"]["/api/jobs"]["post"]
    [param] = [p for p in create["parameters"] if p["name"] == "dry_run"]
    assert param["in"] == "query" and param["schema"]["default"] is False
    checked = create["responses"]["200"]["content"]["application/json"]["schema"]
    assert checked == {"$ref": "#/components/schemas/JobChecked"}
    assert "201" in create["responses"] and "409" in create["responses"]
    schema = doc["paths"]["/api/jobs/schema"]["get"]
    assert not schema.get("security"), "the job schema needs no login"
