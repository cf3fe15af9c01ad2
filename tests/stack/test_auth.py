"""The auth service on the real stack, through the gateway (http://127.0.0.1:8080).

The service runs as a subprocess (``python -m peertrain.auth``) on port 8001 with a
database of this test session's own; see ``peertrain.testkit.auth``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from jose import jwk, jwt

from peertrain.auth.domain.keys import generate_key
from peertrain.common.eventlog import EventLog
from peertrain.common.events.auth import AUTH_REFRESH_REUSE_DETECTED, RefreshReuseDetected
from peertrain.common.events.peers import PEER_ENROLLED, PeerEnrolled
from peertrain.common.events.users import USER_REGISTERED
from peertrain.testkit.auth import AuthUnderTest, shared_auth_service

ERROR_KEYS = {"code", "message", "detail"}


@pytest.fixture(scope="module")
def auth(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthUnderTest]:
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as svc:
        yield svc


@pytest.fixture
async def http(auth: AuthUnderTest) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=auth.gateway_url, timeout=30) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def new_name() -> str:
    return f"u{uuid.uuid4().hex[:12]}"


async def register(http: httpx.AsyncClient) -> tuple[str, str, dict[str, Any]]:
    name, password = new_name(), f"pass {uuid.uuid4().hex}"
    r = await http.post("/register", json={"username": name, "password": password})
    assert r.status_code == 201, r.text
    return name, password, r.json()


async def login(http: httpx.AsyncClient, name: str, password: str) -> dict[str, Any]:
    r = await http.post("/token", data={"username": name, "password": password})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def user_session(http: httpx.AsyncClient) -> tuple[dict[str, Any], dict[str, Any]]:
    name, password, user = await register(http)
    return user, await login(http, name, password)


async def admin_token(http: httpx.AsyncClient, auth: AuthUnderTest) -> str:
    return str((await login(http, auth.admin_username, auth.admin_password))["access_token"])


def assert_error(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == ERROR_KEYS
    return dict(body["error"])


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# -- accounts -------------------------------------------------------------------------------


async def test_register_login_me_through_the_gateway(http: httpx.AsyncClient) -> None:
    name, password, user = await register(http)
    assert user["username"] == name and user["roles"] == ["user"] and user["id"]
    tokens = await login(http, name, password)
    assert tokens["token_type"] == "bearer" and 0 < tokens["expires_in"] <= 900
    assert tokens["refresh_token"].count(".") == 2
    header = jwt.get_unverified_header(tokens["access_token"])
    assert header["alg"] == "RS256" and header["kid"]
    claims = jwt.get_unverified_claims(tokens["access_token"])
    assert {"iss", "aud", "sub", "exp", "iat", "jti", "roles"} <= claims.keys()
    assert claims["exp"] - claims["iat"] <= 900 and claims["sub"] == user["id"]
    r = await http.get("/me", headers=bearer(tokens["access_token"]))
    assert r.status_code == 200 and r.json() == user
    assert assert_error(await http.get("/me"), 401)["code"] == "invalid_token"
    assert r.headers.get("x-request-id")


async def test_text_the_store_cannot_hold_gets_a_clear_answer(
    http: httpx.AsyncClient, auth: AuthUnderTest
) -> None:
    # PostgreSQL (under FerretDB) refuses NUL in text: such input never reaches a query.
    name, password, _ = await register(http)
    tokens = await login(http, name, password)
    r = await http.post("/token", data={"username": "R\x10\x00U", "password": "x" * 12})
    assert assert_error(r, 401)["code"] == "invalid_credentials"
    # the gateway refuses a NUL in the path itself, in the one error shape ...
    r = await http.get("/peers/a%00b", headers=bearer(tokens["access_token"]))
    assert assert_error(r, 400)["code"] == "bad_request"
    # ... and a service reached directly answers "not found" instead of failing
    url = f"{auth.process.base_url}/api/auth/peers/a%00b"
    async with httpx.AsyncClient() as direct:
        r = await direct.get(url, headers=bearer(tokens["access_token"]))
    assert assert_error(r, 404)["code"] == "not_found"


async def test_password_policy(http: httpx.AsyncClient) -> None:
    name = new_name()
    for password in ("too short", "password1234", "PASSWORD1234", name):
        r = await http.post("/register", json={"username": name, "password": password})
        assert assert_error(r, 422)["code"] in {"weak_password", "validation_failed"}
    long_password = "x7" * 64  # 128 characters are accepted
    r = await http.post("/register", json={"username": name, "password": long_password})
    assert r.status_code == 201, r.text
    r = await http.post("/register", json={"username": name, "password": long_password})
    assert assert_error(r, 409)["code"] == "username_taken"
    await login(http, name, long_password)


async def test_registration_is_an_event(
    http: httpx.AsyncClient, auth: AuthUnderTest, mongo: Any
) -> None:
    _, _, user = await register(http)
    events = await EventLog(mongo[auth.mongo_db]).read_stream(f"user:{user['id']}")
    assert [e.type for e in events] == [USER_REGISTERED]
    assert "password" not in json.dumps(events[0].payload_dict())


# -- forged tokens --------------------------------------------------------------------------


async def forgeries(http: httpx.AsyncClient, auth: AuthUnderTest) -> dict[str, str]:
    """Tokens a forger could make, including ones signed with the real key but bad claims."""
    _, tokens = await user_session(http)
    good = tokens["access_token"]
    head, body, sig = good.split(".")
    kid = jwt.get_unverified_header(good)["kid"]
    claims = jwt.get_unverified_claims(good)
    real_key = jwk.construct(auth.private_key_pem(kid), "RS256")
    now = int(time.time())

    def signed(key: Any = real_key, **changes: Any) -> str:
        headers = {"kid": changes.pop("kid", kid), "typ": changes.pop("typ", "at+jwt")}
        body = {k: v for k, v in {**claims, **changes}.items() if v is not None}
        return str(jwt.encode(body, key, "RS256", headers=headers))

    jwks = (await http.get("/.well-known/jwks.json")).json()["keys"]
    public_pem = jwk.construct(next(k for k in jwks if k["kid"] == kid), "RS256").to_pem()
    hs_head = b64(json.dumps({"alg": "HS256", "kid": kid, "typ": "at+jwt"}).encode())
    hs_sig = b64(hmac.new(public_pem, f"{hs_head}.{body}".encode(), hashlib.sha256).digest())
    none_head = b64(json.dumps({"alg": "none", "kid": kid, "typ": "at+jwt"}).encode())
    admin_body = b64(json.dumps({**claims, "roles": ["user", "admin"]}).encode())
    stranger = jwk.construct(generate_key().private_pem, "RS256")
    return {
        "alg none": f"{none_head}.{body}.",
        "alg none, no dot": f"{none_head}.{body}",
        "HS256 signed with the RSA public key": f"{hs_head}.{body}.{hs_sig}",
        "expired": signed(iat=now - 2000, nbf=now - 2000, exp=now - 1000),
        "wrong iss": signed(iss="https://evil.example"),
        "wrong aud": signed(aud="not-peertrain"),
        "tampered payload": f"{head}.{admin_body}.{sig}",
        "unknown kid": signed(stranger, kid="no-such-key"),
        "right kid, stranger's key": signed(stranger),
        "lifetime of a day": signed(exp=now + 86400),
        "not an access token (typ)": signed(typ="JWT"),
        "a refresh token": tokens["refresh_token"],
        "garbage": "garbage",
        "garbage with dots": "a.b.c",
        "non-ascii": "é.é.é",
        "oversized": "A" * 7000,
    }


async def test_every_forged_token_answers_401(http: httpx.AsyncClient, auth: AuthUnderTest) -> None:
    for name, token in (await forgeries(http, auth)).items():
        for path in ("/me", "/peer-enrollments", "/users"):
            raw = {b"Authorization": f"Bearer {token}".encode()}  # some are not ASCII
            r = await http.get(path, headers=raw)
            assert r.status_code == 401, f"{name} on {path}: {r.status_code} {r.text}"
            assert r.json()["error"]["code"] == "invalid_token"
    for header in ("Bearer", "Basic YWRtaW46YWRtaW4=", "Token abc", "bearer x y"):
        r = await http.get("/me", headers={"Authorization": header})
        assert r.status_code == 401, f"{header!r}: {r.status_code}"


# -- roles and ownership --------------------------------------------------------------------


async def enroll_peer(
    http: httpx.AsyncClient, user_token: str, name: str = "box-1"
) -> dict[str, Any]:
    r = await http.post("/peer-enrollments", headers=bearer(user_token))
    assert r.status_code == 201, r.text
    r = await http.post(
        "/peers/enroll", json={"enrollment_token": r.json()["enrollment_token"], "name": name}
    )
    assert r.status_code == 201, r.text
    return dict(r.json())


async def peer_login(http: httpx.AsyncClient, peer: dict[str, Any]) -> str:
    r = await http.post(
        "/peers/token", json={"peer_id": peer["peer_id"], "peer_secret": peer["peer_secret"]}
    )
    assert r.status_code == 200, r.text
    return str(r.json()["access_token"])


async def test_peer_enrollment_and_peer_tokens(
    http: httpx.AsyncClient, auth: AuthUnderTest, mongo: Any
) -> None:
    user, tokens = await user_session(http)
    r = await http.post("/peer-enrollments", headers=bearer(tokens["access_token"]))
    created = r.json()
    expires = datetime.fromisoformat(created["expires_at"])
    assert timedelta(minutes=59) < expires - datetime.now(UTC) <= timedelta(hours=1)
    r = await http.post(
        "/peers/enroll", json={"enrollment_token": created["enrollment_token"], "name": "gpu-1"}
    )
    assert r.status_code == 201, r.text
    peer = r.json()
    assert peer["owner_id"] == user["id"] and peer["peer_secret"].startswith("pts.")
    stored = await mongo[auth.own_db]["peers"].find_one({"_id": peer["peer_id"]})
    assert peer["peer_secret"] not in json.dumps(stored, default=str)
    claims = jwt.get_unverified_claims(await peer_login(http, peer))
    assert claims["sub"] == peer["peer_id"] and claims["roles"] == ["peer"]
    assert claims["owner"] == user["id"]
    r = await http.post(
        "/peers/token", json={"peer_id": peer["peer_id"], "peer_secret": "pts.wrong"}
    )
    assert_error(r, 401)
    events = await EventLog(mongo[auth.mongo_db]).read_stream(f"peer:{peer['peer_id']}")
    assert [e.type for e in events] == [PEER_ENROLLED]
    assert events[0].data == PeerEnrolled(
        peer_id=peer["peer_id"], owner_id=user["id"], name="gpu-1"
    )
    listed = (await http.get("/peers", headers=bearer(tokens["access_token"]))).json()
    assert [p["id"] for p in listed["items"]] == [peer["peer_id"]]
    assert listed["next_offset"] is None
    page = (await http.get("/peer-enrollments", headers=bearer(tokens["access_token"]))).json()
    mine = page["items"]
    assert mine[0]["id"] == created["id"] and mine[0]["peer_id"] == peer["peer_id"]


async def test_roles_and_ownership(http: httpx.AsyncClient) -> None:
    _, alice = await user_session(http)
    _, bob = await user_session(http)
    alice_peer = await enroll_peer(http, alice["access_token"])
    peer_token = await peer_login(http, alice_peer)
    for method, path in (
        ("GET", "/me"),
        ("POST", "/peer-enrollments"),
        ("GET", "/peer-enrollments"),
        ("GET", "/peers"),
        ("GET", "/users"),
        ("POST", "/keys/rotate"),
    ):
        r = await http.request(method, path, headers=bearer(peer_token))
        assert assert_error(r, 403)["code"] == "forbidden", f"peer on {path}"
    for method, path in (("GET", "/users"), ("POST", "/keys/rotate")):
        assert_error(await http.request(method, path, headers=bearer(alice["access_token"])), 403)
    r = await http.post("/peer-enrollments", headers=bearer(alice["access_token"]))
    enrollment_id = r.json()["id"]
    for path in (f"/peer-enrollments/{enrollment_id}", f"/peers/{alice_peer['peer_id']}"):
        assert (await http.get(path, headers=bearer(alice["access_token"]))).status_code == 200
        assert_error(await http.get(path, headers=bearer(bob["access_token"])), 404)
    nothing = {"items": [], "next_offset": None}
    assert (await http.get("/peers", headers=bearer(bob["access_token"]))).json() == nothing
    r = await http.get("/peer-enrollments", headers=bearer(bob["access_token"]))
    assert r.json() == nothing


async def test_enrollment_tokens_are_one_time_and_expire(
    http: httpx.AsyncClient, auth: AuthUnderTest, mongo: Any
) -> None:
    _, tokens = await user_session(http)
    r = await http.post("/peer-enrollments", headers=bearer(tokens["access_token"]))
    token = r.json()["enrollment_token"]
    body = {"enrollment_token": token, "name": "first"}
    assert (await http.post("/peers/enroll", json=body)).status_code == 201
    r = await http.post("/peers/enroll", json={**body, "name": "second"})
    assert assert_error(r, 401)["code"] == "invalid_enrollment_token"
    # An expired one: created, then its expiry moved into the past (time passing).
    r = await http.post(
        "/peer-enrollments", headers=bearer(tokens["access_token"]), json={"ttl_s": 60}
    )
    expired = r.json()
    await mongo[auth.own_db]["enrollments"].update_one(
        {"_id": expired["id"]},
        {"$set": {"expires_at": datetime.now(UTC) - timedelta(seconds=1)}},
    )
    r = await http.post(
        "/peers/enroll", json={"enrollment_token": expired["enrollment_token"], "name": "late"}
    )
    assert assert_error(r, 401)["code"] == "invalid_enrollment_token"
    r = await http.post("/peers/enroll", json={"enrollment_token": "pte.forged", "name": "x"})
    assert_error(r, 401)


# -- refresh tokens -------------------------------------------------------------------------


async def test_refresh_rotates_and_reuse_revokes_the_family(
    http: httpx.AsyncClient, auth: AuthUnderTest, mongo: Any
) -> None:
    user, first = await user_session(http)
    r1 = first["refresh_token"]
    second = (await http.post("/refresh", json={"refresh_token": r1})).json()
    r2 = second["refresh_token"]
    assert r2 != r1 and second["access_token"] != first["access_token"]
    third = (await http.post("/refresh", json={"refresh_token": r2})).json()
    r3 = third["refresh_token"]
    assert (await http.get("/me", headers=bearer(third["access_token"]))).status_code == 200
    stored = await mongo[auth.own_db]["refresh_families"].find_one({"user_id": user["id"]})
    assert r3 not in json.dumps(stored, default=str)  # only digests are stored

    # r1 was spent: presenting it again is theft; the whole family goes.
    r = await http.post("/refresh", json={"refresh_token": r1})
    assert assert_error(r, 401)["code"] == "invalid_refresh_token"
    assert_error(await http.post("/refresh", json={"refresh_token": r3}), 401)
    log = EventLog(mongo[auth.mongo_db])
    reuse = [
        e
        async for e in log.read_all(types=[AUTH_REFRESH_REUSE_DETECTED])
        if isinstance(e.data, RefreshReuseDetected) and e.data.user_id == user["id"]
    ]
    assert len(reuse) == 1


async def test_refresh_token_garbage_and_logout(http: httpx.AsyncClient) -> None:
    for token in ("nonsense", "ptr.x.y", "ptr." + str(uuid.uuid4()) + ".secret"):
        assert_error(await http.post("/refresh", json={"refresh_token": token}), 401)
    _, tokens = await user_session(http)
    r = await http.post("/logout", json={"refresh_token": tokens["refresh_token"]})
    assert r.status_code == 204
    r = await http.post("/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert_error(r, 401)
    assert (await http.post("/logout", json={"refresh_token": "whatever"})).status_code == 204


# -- login throttling -----------------------------------------------------------------------


def comparable(r: httpx.Response) -> tuple[int, Any, dict[str, str]]:
    varying = {"date", "x-request-id", "content-length"}
    return r.status_code, r.json(), {k: v for k, v in r.headers.items() if k not in varying}


async def test_unknown_user_and_wrong_password_answer_identically(
    http: httpx.AsyncClient,
) -> None:
    name, _, _ = await register(http)
    wrong = await http.post("/token", data={"username": name, "password": "not the password"})
    unknown = await http.post(
        "/token", data={"username": new_name(), "password": "not the password"}
    )
    assert wrong.status_code == 401
    assert comparable(wrong) == comparable(unknown)


async def test_brute_force_is_throttled_from_the_sixth_attempt(
    http: httpx.AsyncClient, auth: AuthUnderTest
) -> None:
    name, password, _ = await register(http)
    for attempt in range(1, 6):
        r = await http.post("/token", data={"username": name, "password": f"guess {attempt}"})
        assert r.status_code == 401, f"attempt {attempt}: {r.status_code}"
    for data in ({"password": "guess 6"}, {"password": password}):
        r = await http.post("/token", data={"username": name, **data})
        assert assert_error(r, 429)["code"] == "too_many_requests"
        assert 0 < int(r.headers["retry-after"]) <= 900
    # A forged X-Real-IP / X-Forwarded-For through the gateway changes nothing.
    spoof = {"X-Real-IP": "203.0.113.9", "X-Forwarded-For": "203.0.113.9"}
    r = await http.post("/token", data={"username": name, "password": password}, headers=spoof)
    assert r.status_code == 429
    # Other usernames from the same address are not affected.
    other, other_password, _ = await register(http)
    await login(http, other, other_password)
    # The counters live in MongoDB: a restarted service still refuses.
    auth.process.restart()
    r = await http.post("/token", data={"username": name, "password": password})
    assert r.status_code == 429
    # The same user from another address (as the trusted gateway reports it) may log in.
    async with httpx.AsyncClient(base_url=auth.process.base_url + "/api/auth") as direct:
        r = await direct.post(
            "/token",
            data={"username": name, "password": password},
            headers={"X-Real-IP": "198.51.100.7"},
        )
        assert r.status_code == 200, r.text


async def test_tokens_survive_a_restart(http: httpx.AsyncClient, auth: AuthUnderTest) -> None:
    _, tokens = await user_session(http)
    auth.process.restart()
    assert (await http.get("/me", headers=bearer(tokens["access_token"]))).status_code == 200
    r = await http.post("/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert r.status_code == 200


# -- admin ----------------------------------------------------------------------------------


async def test_admin_lists_and_disables_users(http: httpx.AsyncClient, auth: AuthUnderTest) -> None:
    admin = await admin_token(http, auth)
    name, password, user = await register(http)
    tokens = await login(http, name, password)
    users = (await http.get("/users", headers=bearer(admin), params={"limit": 500})).json()
    assert user["id"] in {u["id"] for u in users["items"]}
    me = (await http.get("/me", headers=bearer(admin))).json()
    assert "admin" in me["roles"]
    assert_error(await http.post(f"/users/{me['id']}/disable", headers=bearer(admin)), 409)
    assert_error(await http.post("/users/nobody/disable", headers=bearer(admin)), 404)
    r = await http.post(
        f"/users/{user['id']}/disable", headers=bearer(admin), json={"reason": "test"}
    )
    assert r.status_code == 200 and r.json()["disabled"] is True
    assert_error(await http.get("/me", headers=bearer(tokens["access_token"])), 401)
    assert_error(await http.post("/refresh", json={"refresh_token": tokens["refresh_token"]}), 401)
    r = await http.post("/token", data={"username": name, "password": password})
    assert assert_error(r, 401)["code"] == "invalid_credentials"


def test_unsafe_settings_refuse_to_start(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "PEERTRAIN_AUTH_ENVIRONMENT": "production",
        "PEERTRAIN_AUTH_PORT": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "peertrain.auth"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "ADMIN_PASSWORD" in done.stderr and "SIGNING_KEY_DIR" in done.stderr
