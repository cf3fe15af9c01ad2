"""``TokenAuth`` on plain httpx clients: what the stack tests and benchmarks rely on."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from fakeapi import FakeApi

from peertrain.client import ApiError, MemoryTokenStore, TokenAuth, Tokens

API = "http://api.test"
REFRESH = f"{API}/api/auth/refresh"


def auth(tokens: Tokens | None = None, **kw: object) -> TokenAuth:
    return TokenAuth(tokens or Tokens("access-1", "refresh-1"), refresh_url=REFRESH, **kw)  # type: ignore[arg-type]


def paths(api: FakeApi) -> list[str]:
    return [r.url.path for r in api.requests]


def test_an_expired_token_is_renewed_and_the_request_repeated(api: FakeApi) -> None:
    api.route("GET", "/api/jobs", {"items": []})
    store = MemoryTokenStore()
    flow = auth(token_store=store)
    with httpx.Client(base_url=API, auth=flow, transport=api.transport) as http:
        assert http.get("/api/jobs").status_code == 200
        api.expire()
        assert http.get("/api/jobs").status_code == 200
    assert paths(api) == ["/api/jobs", "/api/jobs", "/api/auth/refresh", "/api/jobs"]
    assert store.tokens is not None and store.tokens.access_token == "access-2"


def test_a_token_about_to_expire_is_renewed_before_the_request(api: FakeApi) -> None:
    api.route("GET", "/api/jobs", {"items": []})
    flow = auth(Tokens("access-1", "refresh-1", expires_at=time.time() + 5))
    with httpx.Client(base_url=API, auth=flow, transport=api.transport) as http:
        assert http.get("/api/jobs").status_code == 200
    assert paths(api) == ["/api/auth/refresh", "/api/jobs"]
    assert api.requests[-1].headers["authorization"] == "Bearer access-2"


def test_a_refused_refresh_token_ends_the_session(api: FakeApi) -> None:
    api.route("GET", "/api/jobs", {"items": []})
    api.expire()
    api.valid_refresh.clear()
    flow = auth()
    with (
        httpx.Client(base_url=API, auth=flow, transport=api.transport) as http,
        pytest.raises(ApiError) as e,
    ):
        http.get("/api/jobs")
    assert e.value.code == "session_expired" and flow.tokens is None


def slow(api: FakeApi) -> httpx.MockTransport:
    """The fake API, answering after a pause (so that concurrent requests overlap)."""

    async def handle(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.01)
        return api.handle(request)

    return httpx.MockTransport(handle)


async def test_concurrent_401s_spend_the_refresh_token_once(api: FakeApi) -> None:
    # A second refresh with the spent token would end the session.
    api.route("GET", "/api/jobs", {"items": []})
    api.expire()
    flow = auth()
    async with httpx.AsyncClient(base_url=API, auth=flow, transport=slow(api)) as http:
        answers = await asyncio.gather(*(http.get("/api/jobs") for _ in range(8)))
    assert [r.status_code for r in answers] == [200] * 8
    assert paths(api).count("/api/auth/refresh") == 1
    assert flow.tokens is not None and flow.tokens.access_token == "access-2"


def test_one_auth_serves_one_event_loop_after_another(api: FakeApi) -> None:
    api.route("GET", "/api/jobs", {"items": []})
    flow = auth()

    async def expire_and_get() -> int:
        api.expire()
        async with httpx.AsyncClient(base_url=API, auth=flow, transport=slow(api)) as http:
            codes = await asyncio.gather(http.get("/api/jobs"), http.get("/api/jobs"))
        return sum(r.status_code for r in codes)

    assert asyncio.run(expire_and_get()) == 400
    assert asyncio.run(expire_and_get()) == 400
    assert paths(api).count("/api/auth/refresh") == 2
