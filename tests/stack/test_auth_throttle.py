"""Throttling of password checks and registrations, on the real stack.

Concurrent guesses go through the gateway to the shared auth service; the number of
password checks is read from the service's own ``/metrics``, never inferred from
timings. Per-address limits are tested with the service restarted on tight limits,
called directly with ``X-Real-IP`` (believed from 127.0.0.1, the trusted gateway's
address), so each test has addresses of its own. The trusted proxy is then given as
compose and Helm give theirs, a CIDR block; through the real gateway, clients connect
from loopback addresses of their own (127.x.y.z), as clients from other machines would.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from peertrain.auth.config import AuthSettings
from peertrain.testkit.auth import AuthUnderTest, shared_auth_service

ERROR_KEYS = {"code", "message", "detail"}
USER_LIMIT = AuthSettings.model_fields["login_max_failures"].default
WINDOW_S = AuthSettings.model_fields["login_window_s"].default
ADDRESS_LIMIT = 6
REGISTER_LIMIT = 3
CHECKS = "peertrain_auth_password_checks_total"
HASHES = "peertrain_auth_password_hashes_total"
THROTTLED = "peertrain_auth_throttled_total"


@pytest.fixture(scope="module")
def auth(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthUnderTest]:
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as svc:
        yield svc


@pytest.fixture
def tight(auth: AuthUnderTest) -> Iterator[AuthUnderTest]:
    """The shared service restarted with small per-address limits (and back after)."""
    saved = dict(auth.process.env)
    auth.process.env.update(
        {
            "PEERTRAIN_AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS": str(ADDRESS_LIMIT),
            "PEERTRAIN_AUTH_REGISTER_MAX_PER_ADDRESS": str(REGISTER_LIMIT),
            # the gateway, as a block (compose's and Helm's gateways are not 127.0.0.1)
            "PEERTRAIN_AUTH_TRUSTED_PROXIES": "127.0.0.1/32",
        }
    )
    auth.process.restart()
    try:
        yield auth
    finally:
        auth.process.env.clear()
        auth.process.env.update(saved)
        auth.process.restart()


@pytest.fixture
async def direct(auth: AuthUnderTest) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=auth.process.base_url + "/api/auth", timeout=60) as c:
        yield c


def new_name() -> str:
    return f"u{uuid.uuid4().hex[:12]}"


def new_password() -> str:
    return f"pass {uuid.uuid4().hex}"


def from_address(address: str) -> dict[str, str]:
    return {"X-Real-IP": address}


def loopback() -> str:
    """A loopback address of a client of its own (not 127.0.0.1, the gateway's)."""
    return f"127.{random.randint(1, 254)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


def client_from(address: str, base_url: str) -> httpx.AsyncClient:
    """A client whose connections come from ``address``."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    return httpx.AsyncClient(base_url=base_url, transport=transport, timeout=60)


def metric(auth: AuthUnderTest, name: str, **labels: str) -> float:
    """A sample of the auth service's own ``/metrics`` (0 when absent)."""
    text = httpx.get(auth.process.base_url + "/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def assert_throttled(r: httpx.Response, window_s: int) -> None:
    assert r.status_code == 429, r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == ERROR_KEYS
    assert body["error"]["code"] == "too_many_requests"
    assert 0 < int(r.headers["retry-after"]) <= window_s
    assert body["error"]["detail"] == {"retry_after_s": int(r.headers["retry-after"])}


def windows_spanned(started: float, ended: float, window_s: int) -> int:
    """Fixed windows (aligned on the epoch) that a burst touched: the limit is per window."""
    return int(ended // window_s) - int(started // window_s) + 1


async def register(http: httpx.AsyncClient, **kwargs: Any) -> tuple[str, str]:
    name, password = new_name(), new_password()
    r = await http.post("/register", json={"username": name, "password": password}, **kwargs)
    assert r.status_code == 201, r.text
    return name, password


async def test_concurrent_wrong_passwords_check_at_most_the_limit(auth: AuthUnderTest) -> None:
    async with httpx.AsyncClient(base_url=auth.gateway_url, timeout=120) as http:
        name, password = await register(http)
        checks = metric(auth, CHECKS)
        started = time.time()
        answers = await asyncio.gather(
            *(
                http.post("/token", data={"username": name, "password": f"guess {i}"})
                for i in range(50)
            )
        )
        ended = time.time()
        checked = metric(auth, CHECKS) - checks
        statuses = Counter(r.status_code for r in answers)
        assert set(statuses) == {401, 429}, statuses
        assert statuses[401] <= USER_LIMIT * windows_spanned(started, ended, WINDOW_S), statuses
        assert checked == statuses[401] >= 1, (checked, statuses)
        for r in answers:
            if r.status_code == 429:
                assert_throttled(r, WINDOW_S)
        # the right password is refused too, without a check, until the window ends
        r = await http.post("/token", data={"username": name, "password": password})
        assert_throttled(r, WINDOW_S)
        assert metric(auth, CHECKS) - checks == checked
        assert metric(auth, THROTTLED, limit="login_user") >= 50 - checked + 1


async def test_password_spraying_across_usernames_is_refused_per_address(
    tight: AuthUnderTest, direct: httpx.AsyncClient
) -> None:
    sprayer, neighbour, regular = "203.0.113.10", "203.0.113.11", "203.0.113.12"
    name, password = await register(direct, headers=from_address(neighbour))
    checks = metric(tight, CHECKS)
    started = time.time()
    answers = await asyncio.gather(
        *(
            direct.post(
                "/token",
                data={"username": new_name(), "password": "Winter2026!spray"},
                headers=from_address(sprayer),
            )
            for _ in range(30)
        )
    )
    ended = time.time()
    checked = metric(tight, CHECKS) - checks
    statuses = Counter(r.status_code for r in answers)
    assert set(statuses) == {401, 429}, statuses
    assert statuses[401] <= ADDRESS_LIMIT * windows_spanned(started, ended, WINDOW_S), statuses
    assert checked == statuses[401] >= 1, (checked, statuses)
    for r in answers:
        if r.status_code == 429:
            assert_throttled(r, WINDOW_S)
    assert metric(tight, THROTTLED, limit="login_address") == 30 - checked
    # That address may not log in at all for now; another one may.
    form = {"username": name, "password": password}
    assert_throttled(
        await direct.post("/token", data=form, headers=from_address(sprayer)), WINDOW_S
    )
    r = await direct.post("/token", data=form, headers=from_address(neighbour))
    assert r.status_code == 200, r.text
    # Successful logins do not use up an address's allowance.
    for _ in range(ADDRESS_LIMIT + 2):
        r = await direct.post("/token", data=form, headers=from_address(regular))
        assert r.status_code == 200, r.text


async def test_registrations_are_limited_per_address(
    tight: AuthUnderTest, direct: httpx.AsyncClient
) -> None:
    window_s = AuthSettings.model_fields["register_window_s"].default
    hashes = metric(tight, HASHES)
    started = time.time()
    answers = await asyncio.gather(
        *(
            direct.post(
                "/register",
                json={"username": new_name(), "password": new_password()},
                headers=from_address("198.51.100.20"),
            )
            for _ in range(12)
        )
    )
    ended = time.time()
    hashed = metric(tight, HASHES) - hashes
    statuses = Counter(r.status_code for r in answers)
    assert set(statuses) == {201, 429}, statuses
    assert statuses[201] <= REGISTER_LIMIT * windows_spanned(started, ended, window_s), statuses
    assert hashed == statuses[201] >= 1, (hashed, statuses)
    for r in answers:
        if r.status_code == 429:
            assert_throttled(r, window_s)
    assert metric(tight, THROTTLED, limit="register") == 12 - hashed
    # another address may still register
    await register(direct, headers=from_address("198.51.100.21"))


async def test_behind_the_gateway_each_client_is_throttled_on_its_own_address(
    tight: AuthUnderTest,
) -> None:
    """Through the gateway (a trusted proxy): one client spraying guesses, forging
    forwarding headers that name another client, locks out its own address only."""
    sprayer, neighbour = loopback(), loopback()
    forged = {"X-Forwarded-For": neighbour, "X-Real-IP": neighbour}
    async with (
        client_from(sprayer, tight.gateway_url) as spray,
        client_from(neighbour, tight.gateway_url) as other,
    ):
        name, password = await register(other)
        for _ in range(ADDRESS_LIMIT):
            guess = {"username": new_name(), "password": "Winter2026!spray"}
            r = await spray.post("/token", data=guess, headers=forged)
            assert r.status_code == 401, r.text
        form = {"username": name, "password": password}
        assert_throttled(await spray.post("/token", data=form, headers=forged), WINDOW_S)
        assert_throttled(await spray.post("/token", data=form), WINDOW_S)
        # the neighbour (and the gateway's other clients) are not touched
        r = await other.post("/token", data=form)
        assert r.status_code == 200, r.text
        async with client_from(loopback(), tight.gateway_url) as third:
            r = await third.post("/token", data=form)
            assert r.status_code == 200, r.text


async def test_an_untrusted_hop_cannot_choose_its_address_with_forwarding_headers(
    tight: AuthUnderTest,
) -> None:
    """Straight to auth from an address that is no trusted proxy: its headers count for
    nothing, so its guesses use up its own allowance, not the address it names."""
    intruder, victim = loopback(), loopback()
    forged = {"X-Forwarded-For": victim, "X-Real-IP": victim}
    base = tight.process.base_url + "/api/auth"
    async with client_from(intruder, base) as direct, client_from(victim, base) as own:
        name, password = await register(own)
        for _ in range(ADDRESS_LIMIT):
            guess = {"username": new_name(), "password": "Winter2026!spray"}
            r = await direct.post("/token", data=guess, headers=forged)
            assert r.status_code == 401, r.text
        form = {"username": name, "password": password}
        assert_throttled(await direct.post("/token", data=form, headers=forged), WINDOW_S)
        r = await own.post("/token", data=form)
        assert r.status_code == 200, r.text
