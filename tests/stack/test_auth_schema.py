"""schemathesis against the auth service's OpenAPI: every operation, generated inputs.

Each operation is called with valid (positive) and invalid (negative) generated inputs,
with an admin's token so the happy paths are reached too. No answer may be a 5xx, and
every answer must match what the schema documents: status code, content type, headers
and body. (schemathesis's pytest loader does not run under pytest 9, so the operations
are driven through its Python API, one subtest each.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from peertrain.testkit.auth import AuthUnderTest, shared_auth_service

EXAMPLES = 25

# The password policy refuses the most common breached passwords and the username as
# password: rules JSON Schema cannot express, so a schema-valid registration may get 422.
EXEMPT = {"POST /api/auth/register": [positive_data_acceptance]}
# Each call rotates the signing key, and auth keeps at most 8 published: stay well below.
FEWER = {"POST /api/auth/keys/rotate": 2}


@pytest.fixture(scope="module")
def auth(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthUnderTest]:
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as svc:
        yield svc


def admin_headers(auth: AuthUnderTest) -> dict[str, str]:
    r = httpx.post(
        f"{auth.gateway_url}/token",
        data={"username": auth.admin_username, "password": auth.admin_password},
        timeout=30,
    )
    r.raise_for_status()
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


def check_operation(operation: Any, mode: GenerationMode, headers: dict[str, str]) -> None:
    excluded = EXEMPT.get(operation.label, [])

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=FEWER.get(operation.label, EXAMPLES),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        case.call_and_validate(headers=headers, excluded_checks=excluded, timeout=30)

    try:
        run()
    except Unsatisfiable:
        if mode is GenerationMode.POSITIVE:
            raise
        # No inputs at all (e.g. GET .well-known/jwks.json): nothing invalid to send.


def test_every_operation_honours_its_schema(auth: AuthUnderTest, subtests: Any) -> None:
    schema = schemathesis.openapi.from_url(f"{auth.process.base_url}/api/auth/openapi.json")
    headers = admin_headers(auth)
    labels = []
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]  # an Err would raise here
        labels.append(operation.label)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            with subtests.test(msg=f"{operation.label} ({mode.value})"):
                check_operation(operation, mode, headers)
    assert "POST /api/auth/token" in labels and "POST /api/auth/keys/rotate" in labels
    assert len(labels) >= 15
