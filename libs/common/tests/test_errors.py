"""The one JSON error shape, without the stack (a bare app with the same handlers)."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from peertrain.common.app import install_error_handlers
from peertrain.common.app.middleware import RequestContextMiddleware
from peertrain.common.errors import Conflict, NotFound


def make_app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)
    app.add_middleware(RequestContextMiddleware, service="unit")

    @app.get("/missing")
    async def missing() -> None:
        raise NotFound("no such thing", detail={"id": "x"})

    @app.get("/conflict")
    async def conflict() -> None:
        raise Conflict("taken")

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("secret internals")

    @app.get("/typed/{n}")
    async def typed(n: int) -> dict[str, int]:
        return {"n": n}

    return app


client = TestClient(make_app(), raise_server_exceptions=False)


def test_domain_errors_map_to_status_and_code() -> None:
    r = client.get("/missing")
    assert r.status_code == 404
    assert r.json() == {
        "error": {"code": "not_found", "message": "no such thing", "detail": {"id": "x"}}
    }
    assert client.get("/conflict").json()["error"]["code"] == "conflict"


def test_validation_and_routing_errors_share_the_shape() -> None:
    r = client.get("/typed/abc")
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "validation_failed"
    assert r.json()["error"]["detail"][0]["loc"] == ["path", "n"]
    assert client.get("/nowhere").json()["error"]["code"] == "not_found"


def test_unexpected_errors_hide_internals() -> None:
    r = client.get("/boom")
    assert r.status_code == 500
    assert "secret" not in r.text
    assert r.json()["error"]["code"] == "internal_error"


def test_request_id_is_kept_or_made() -> None:
    assert (
        client.get("/typed/1", headers={"X-Request-ID": "req-42"}).headers["x-request-id"]
        == "req-42"
    )
    made = client.get("/typed/1", headers={"X-Request-ID": "bad id with spaces"}).headers[
        "x-request-id"
    ]
    assert made != "bad id with spaces" and len(made) == 36
