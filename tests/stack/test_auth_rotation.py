"""Tokens verified by *another* service, across key rotation and user disabling.

The other service is the probe (``python -m peertrain.testkit.auth probe``): built with
``create_app`` + ``install_security`` like every PeerTrain service, it never calls auth;
it learns keys and disabled users from events and from the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from jose import jwt

from peertrain.auth.application import AuthApp
from peertrain.auth.config import AuthSettings
from peertrain.auth.domain.hashing import Argon2Params, PasswordHasher
from peertrain.auth.domain.passwords import PasswordPolicy
from peertrain.auth.store import KeyStore, PeerStore, SessionStore, ThrottleStore, UserStore
from peertrain.auth.usecases import keys as key_cases
from peertrain.common.app import Ports
from peertrain.common.clock import ManualClock
from peertrain.common.eventlog import EventLog
from peertrain.common.events.auth import AUTH_KEYS_ROTATED, KeysRotated
from peertrain.common.security import (
    InsufficientRole,
    InvalidToken,
    Security,
    SecuritySettings,
    peer_headers,
    verify_message,
)
from peertrain.testkit.auth import PROBE_PREFIX, AuthUnderTest, probe_process, shared_auth_service
from peertrain.testkit.common import RABBIT_API


@pytest.fixture(scope="module")
def auth(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthUnderTest]:
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as svc:
        yield svc


@pytest.fixture(scope="module")
def probe(auth: AuthUnderTest) -> Iterator[str]:
    """The other service's base URL."""
    process = probe_process(mongo_db=auth.mongo_db, log_dir=auth.log_dir)
    process.start()
    yield process.base_url + PROBE_PREFIX
    process.stop()
    _delete_queues("authprobe.security", "authprobe.security.dlq")


def _delete_queues(*names: str) -> None:
    """Best effort: leave no queue of the probe behind (it would collect events)."""
    for name in names:
        with contextlib.suppress(httpx.HTTPError):
            url = f"{RABBIT_API}/queues/%2F/{name}"
            httpx.delete(url, auth=("admin", "admin"), timeout=5)


@pytest.fixture
async def http(auth: AuthUnderTest) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=auth.gateway_url, timeout=30) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def new_user(http: httpx.AsyncClient) -> tuple[dict[str, Any], dict[str, Any]]:
    name, password = f"u{uuid.uuid4().hex[:12]}", f"pass {uuid.uuid4().hex}"
    r = await http.post("/register", json={"username": name, "password": password})
    assert r.status_code == 201, r.text
    r = await http.post("/token", data={"username": name, "password": password})
    assert r.status_code == 200, r.text
    return r.json(), {"username": name, "password": password, **(await _me(http, r.json()))}


async def _me(http: httpx.AsyncClient, tokens: dict[str, Any]) -> dict[str, Any]:
    return dict((await http.get("/me", headers=bearer(tokens["access_token"]))).json())


async def admin(http: httpx.AsyncClient, auth: AuthUnderTest) -> str:
    data = {"username": auth.admin_username, "password": auth.admin_password}
    r = await http.post("/token", data=data)
    assert r.status_code == 200, r.text
    return str(r.json()["access_token"])


async def new_peer(http: httpx.AsyncClient, user_token: str) -> dict[str, Any]:
    r = await http.post("/peer-enrollments", headers=bearer(user_token))
    r = await http.post(
        "/peers/enroll", json={"enrollment_token": r.json()["enrollment_token"], "name": "p"}
    )
    assert r.status_code == 201, r.text
    return dict(r.json())


async def peer_login(http: httpx.AsyncClient, peer: dict[str, Any]) -> httpx.Response:
    body = {"peer_id": peer["peer_id"], "peer_secret": peer["peer_secret"]}
    return await http.post("/peers/token", json=body)


async def new_peer_token(http: httpx.AsyncClient, user_token: str) -> tuple[str, str]:
    peer = await new_peer(http, user_token)
    r = await peer_login(http, peer)
    assert r.status_code == 200, r.text
    return peer["peer_id"], str(r.json()["access_token"])


async def test_other_service_verifies_tokens_across_a_rotation(
    http: httpx.AsyncClient, auth: AuthUnderTest, probe: str, eventually: Any
) -> None:
    async with httpx.AsyncClient(base_url=probe, timeout=30) as other:
        old_tokens, user = await new_user(http)
        old = old_tokens["access_token"]
        r = await other.get("/whoami", headers=bearer(old))
        assert r.status_code == 200 and r.json()["sub"] == user["id"]
        peer_id, peer_token = await new_peer_token(http, old)
        r = await other.get("/peer-only", headers=bearer(peer_token))
        assert r.status_code == 200 and r.json() == {"peer_id": peer_id, "owner": user["id"]}
        assert (await other.get("/peer-only", headers=bearer(old))).status_code == 403
        assert (await other.get("/whoami")).status_code == 401
        assert (await other.get("/whoami", headers=bearer("a.b.c"))).status_code == 401

        old_kid = jwt.get_unverified_header(old)["kid"]
        r = await http.post("/keys/rotate", headers=bearer(await admin(http, auth)))
        assert r.status_code == 200, r.text
        kids = [k["kid"] for k in r.json()["keys"]]
        new_kid = kids[0]
        assert new_kid != old_kid and old_kid in kids  # the old key stays published
        jwks = (await http.get("/.well-known/jwks.json")).json()
        assert [k["kid"] for k in jwks["keys"]][:2] == [new_kid, old_kid]

        # auth.keys_rotated reaches the other service over the bus, before it has seen
        # a single token signed by the new key (its periodic re-read is 60 s away).
        async def probe_kids() -> set[str]:
            return set((await other.get("/kids")).json())

        async def learned() -> bool:
            return {new_kid, old_kid} <= await probe_kids()

        assert await eventually(learned, timeout=20, what="auth.keys_rotated at the probe")

        new = (
            await http.post(
                "/token", data={"username": user["username"], "password": user["password"]}
            )
        ).json()["access_token"]
        assert jwt.get_unverified_header(new)["kid"] == new_kid
        # Both verify in the other service, which was not restarted.
        for token in (new, old, peer_token):
            r = await other.get("/whoami", headers=bearer(token))
            assert r.status_code == 200, r.text


async def test_disabled_users_are_refused_by_every_service(
    http: httpx.AsyncClient, auth: AuthUnderTest, probe: str, eventually: Any
) -> None:
    tokens, user = await new_user(http)
    peer = await new_peer(http, tokens["access_token"])
    peer_token = (await peer_login(http, peer)).json()["access_token"]
    async with httpx.AsyncClient(base_url=probe, timeout=30) as other:
        for token in (tokens["access_token"], peer_token):
            assert (await other.get("/whoami", headers=bearer(token))).status_code == 200
        r = await http.post(f"/users/{user['id']}/disable", headers=bearer(await admin(http, auth)))
        assert r.status_code == 200, r.text

        async def refused() -> bool:
            codes = [
                (await other.get("/whoami", headers=bearer(t))).status_code
                for t in (tokens["access_token"], peer_token)
            ]
            return codes == [401, 401]

        # Their tokens have not expired, yet the other service refuses them.
        assert await eventually(refused, timeout=30, what="probe refuses the disabled user")
    assert (await peer_login(http, peer)).status_code == 401  # nor new peer tokens
    assert (
        await http.post("/refresh", json={"refresh_token": tokens["refresh_token"]})
    ).status_code == 401


async def test_tokens_in_message_headers(
    http: httpx.AsyncClient, auth: AuthUnderTest, mongo: Any
) -> None:
    security = Security(EventLog(mongo[auth.mongo_db]), SecuritySettings())
    await security.refresh()
    tokens, _ = await new_user(http)
    peer_id, peer_token = await new_peer_token(http, tokens["access_token"])
    who = await verify_message(security, peer_headers(peer_token), peer_id=peer_id)
    assert who.subject == peer_id and who.is_peer
    raw = {"authorization": f"Bearer {peer_token}".encode()}  # AMQP may hand over bytes
    assert (await verify_message(security, raw, peer_id=peer_id)).subject == peer_id
    with pytest.raises(InsufficientRole):
        await verify_message(security, peer_headers(peer_token), peer_id="another-peer")
    with pytest.raises(InsufficientRole):
        await verify_message(security, peer_headers(tokens["access_token"]))
    for headers in ({}, None, {"authorization": "Basic x"}, peer_headers("garbage")):
        with pytest.raises(InvalidToken):
            await verify_message(security, headers, peer_id=peer_id)


async def test_retired_keys_leave_the_published_set(
    mongo: Any, run_id: str, tmp_path: Path
) -> None:
    """In process, on the real database, with the clock moved past the retirement time."""
    db = mongo[f"pt_authkeys_{run_id}_{uuid.uuid4().hex[:6]}"]
    log = EventLog(db)
    await log.ensure_indexes()
    settings = AuthSettings(signing_key_dir=tmp_path, access_ttl_s=60, signer_cache_s=0)
    security = Security(log, SecuritySettings(leeway_s=0))
    clock = ManualClock(datetime.now(UTC))
    auth = AuthApp(
        ports=Ports(log=log, clock=clock),
        settings=settings,
        security=security,
        users=UserStore(db),
        sessions=SessionStore(db),
        throttle=ThrottleStore(db),
        keys=KeyStore(db, tmp_path, cache_s=0, clock=clock),
        peers=PeerStore(db),
        hasher=PasswordHasher(Argon2Params(time_cost=1, memory_kib=8192)),
        policy=PasswordPolicy(frozenset()),
        hash_slots=asyncio.Semaphore(1),
    )
    await key_cases.ensure_keys(auth)
    first = (await key_cases.published(auth))[0].kid
    await key_cases.rotate(auth, actor=None)
    second = (await key_cases.published(auth))[0].kid
    assert security.keys.kids == {first, second}
    assert await key_cases.retire_due(auth) == 0  # its last token may still be alive

    clock.advance(61)
    assert await key_cases.retire_due(auth) == 1
    assert [k.kid for k in await key_cases.published(auth)] == [second]
    assert not (tmp_path / f"{first}.pem").exists()  # its private key is gone too
    events = [e async for e in log.read_all(types=[AUTH_KEYS_ROTATED])]
    assert [len(e.data.keys) for e in events if isinstance(e.data, KeysRotated)] == [1, 2, 1]
    await security.refresh()
    assert security.keys.kids == {second}
    await mongo.drop_database(db.name)
