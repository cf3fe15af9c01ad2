"""The SDK tries transient failures again, with capped exponential backoff, but only
requests that are safe to send twice; a long ``watch`` outlives a gateway blip."""

from __future__ import annotations

import random
from collections.abc import Iterator

import httpx
import pytest
from fakeapi import FakeApi, error

from peertrain.client import ApiError, ApiUnreachable, AsyncClient, Client, RetryPolicy, Tokens
from peertrain.client.retry import retry_after

API = "http://api.test"
FAST = RetryPolicy(attempts=4, base_s=0.0, cap_s=0.0)


def client(api: FakeApi, retry: RetryPolicy = FAST) -> Client:
    return Client(API, tokens=Tokens("access-1", "refresh-1"), transport=api.transport, retry=retry)


def flaky(*answers: httpx.Response) -> Iterator[httpx.Response]:
    yield from answers
    while True:
        yield httpx.Response(200, json={"items": [], "next_offset": None})


def test_a_read_is_tried_again_after_502_503_504_and_429_with_retry_after(api: FakeApi) -> None:
    answers = flaky(
        error(502, "bad_gateway", "the service did not answer"),
        error(503, "unavailable", "starting"),
        httpx.Response(429, headers={"Retry-After": "0"}, json={}),
    )
    api.route("GET", "/api/jobs", lambda r: next(answers))
    with client(api) as pt:
        assert pt.list_jobs() == []
    assert len([r for r in api.requests if r.url.path == "/api/jobs"]) == 4


def test_it_gives_up_after_its_attempts(api: FakeApi) -> None:
    api.route("GET", "/api/jobs/j", lambda r: error(504, "gateway_timeout", "too slow"))
    with client(api) as pt, pytest.raises(ApiError) as failed:
        pt.get_job("j")
    assert failed.value.status == 504
    assert len(api.requests) == FAST.attempts


def test_a_creation_is_never_sent_twice_but_a_dry_run_is(api: FakeApi) -> None:
    api.route("POST", "/api/jobs", lambda r: error(502, "bad_gateway", "away"))
    with client(api) as pt:
        with pytest.raises(ApiError):
            pt.create_job({"name": "j"})
        assert len(api.requests) == 1
        with pytest.raises(ApiError):
            pt.check_job({"name": "j"})
    assert len(api.requests) == 1 + FAST.attempts
    assert api.requests[-1].url.params["dry_run"] == "true"


def test_a_429_without_retry_after_or_asking_too_long_is_not_retried(api: FakeApi) -> None:
    api.route("GET", "/api/jobs/a", lambda r: httpx.Response(429, json={}))
    api.route("GET", "/api/jobs/b", lambda r: httpx.Response(429, headers={"Retry-After": "3600"}))
    with client(api) as pt:
        for job in ("a", "b"):
            with pytest.raises(ApiError):
                pt.get_job(job)
    assert len(api.requests) == 2


def test_a_connection_that_could_not_be_made_is_tried_again_for_any_request() -> None:
    tries: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        tries.append(request.method)
        if len(tries) < 3:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(201, json={"job_id": "j1"})

    with Client(API, tokens=Tokens("a"), transport=httpx.MockTransport(handler), retry=FAST) as pt:
        assert pt.create_job({"name": "j"}) == "j1"
    assert tries == ["POST"] * 3


def test_a_read_that_broke_off_is_retried_only_when_safe() -> None:
    tries: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        tries.append(request.method)
        raise httpx.ReadError("connection reset", request=request)

    transport = httpx.MockTransport(handler)
    with Client(API, tokens=Tokens("a"), transport=transport, retry=FAST) as pt:
        with pytest.raises(ApiUnreachable):
            pt.create_job({"name": "j"})
        assert len(tries) == 1
        with pytest.raises(ApiUnreachable):
            pt.get_job("j")
    assert len(tries) == 1 + FAST.attempts


def test_backoff_doubles_up_to_its_cap_with_jitter() -> None:
    policy = RetryPolicy(base_s=1.0, cap_s=4.0, rng=random.Random(1))
    waits = [policy.backoff(n) for n in range(1, 6)]
    ceilings = [1.0, 2.0, 4.0, 4.0, 4.0]
    assert all(c / 2 <= w <= c for w, c in zip(waits, ceilings, strict=True))
    answer = httpx.Response(429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert retry_after(answer) == 0.0  # a date in the past: now


def test_watch_outlives_a_gateway_blip(api: FakeApi) -> None:
    states = iter(["running", "running", "completed"])
    down = iter([True] * 6 + [False] * 100)  # longer than one request's retries

    def job(request: httpx.Request) -> httpx.Response:
        if next(down):
            return error(502, "bad_gateway", "the orchestrator is away")
        return httpx.Response(200, json={"job_id": "j", "state": next(states), "rounds": 1})

    api.route("GET", "/api/jobs/j", job)
    api.route("GET", "/api/jobs/j/metrics", {"rounds": [], "peers": []})
    with client(api) as pt:
        seen = [p.state for p in pt.watch_job("j", interval=0.0, patience=60.0)]
    assert seen == ["running", "running", "completed"]


def test_watch_gives_up_on_an_error_that_is_not_transient(api: FakeApi) -> None:
    api.route("GET", "/api/jobs/j", lambda r: error(404, "job_not_found", "no job 'j'"))
    with client(api) as pt, pytest.raises(ApiError):
        list(pt.watch_job("j", interval=0.0))
    assert len(api.requests) == 1


async def test_the_async_client_retries_the_same_way(api: FakeApi) -> None:
    answers = flaky(error(503, "unavailable", "starting"))
    api.route("GET", "/api/jobs", lambda r: next(answers))
    async with AsyncClient(
        API, tokens=Tokens("access-1"), transport=api.transport, retry=FAST
    ) as pt:
        assert await pt.list_jobs() == []
    assert len(api.requests) == 2
