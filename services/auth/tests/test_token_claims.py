"""Access-token claims as auth issues them, checked by the shared verifier (no I/O)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from jose import jwk, jwt

from peertrain.auth.config import DEFAULT_SIGNING_KEY_DIR, AuthSettings
from peertrain.auth.domain.keys import NewKey, generate_key, public_jwk, retires_at, thumbprint
from peertrain.auth.domain.tokens import access_claims
from peertrain.common.security import (
    ACCESS_TOKEN_TYPE,
    DEFAULT_AUDIENCE,
    DEFAULT_ISSUER,
    DisabledUsers,
    InsufficientRole,
    InvalidToken,
    KeySet,
    Principal,
    TokenVerifier,
    UnknownSigningKey,
    require_role,
)
from peertrain.common.security.deps import get_peer, get_user


@pytest.fixture(scope="module")
def key() -> NewKey:
    return generate_key()


@pytest.fixture
def disabled() -> DisabledUsers:
    return DisabledUsers()


@pytest.fixture
def verifier(key: NewKey, disabled: DisabledUsers) -> TokenVerifier:
    keys = KeySet()
    keys.replace([key.jwk.model_dump()], version=1)
    return TokenVerifier(keys, disabled, issuer=DEFAULT_ISSUER, audience=DEFAULT_AUDIENCE)


def claims(**changes: Any) -> dict[str, Any]:
    base = access_claims(
        subject="user-1",
        roles=("user",),
        issuer=DEFAULT_ISSUER,
        audience=DEFAULT_AUDIENCE,
        now=int(time.time()),
        ttl_s=900,
        username="ada",
    )
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def sign(key: NewKey, body: dict[str, Any], **headers: Any) -> str:
    head = {"kid": key.kid, "typ": ACCESS_TOKEN_TYPE, **headers}
    return str(jwt.encode(body, jwk.construct(key.private_pem, "RS256"), "RS256", headers=head))


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_issued_claims_are_complete_and_short_lived() -> None:
    body = access_claims(subject="s", roles=["user"], issuer="i", audience="a", now=1000, ttl_s=900)
    assert {"iss", "aud", "sub", "exp", "iat", "jti", "roles"} <= body.keys()
    assert body["exp"] - body["iat"] == 900
    assert (
        body["jti"]
        != access_claims(
            subject="s", roles=["user"], issuer="i", audience="a", now=1000, ttl_s=900
        )["jti"]
    )


def test_a_good_token_verifies(key: NewKey, verifier: TokenVerifier) -> None:
    token = sign(key, claims())
    header = jwt.get_unverified_header(token)
    assert header == {"alg": "RS256", "kid": key.kid, "typ": "at+jwt"}
    who = verifier.verify(token)
    assert who.subject == "user-1" and who.roles == {"user"} and who.username == "ada"
    assert who.is_user and not who.is_admin and not who.is_peer


FORGERIES = (
    "alg none",
    "HS256 with the public key as secret",
    "expired",
    "wrong iss",
    "wrong aud",
    "tampered payload",
    "unknown kid",
    "known kid, other key",
    "lifetime over 15 minutes",
    "issued in the future",
    "not valid yet",
    "no exp",
    "no typ",
    "no jti",
    "no roles",
    "roles not a list",
    "a refresh token",
    "garbage",
    "three garbage parts",
    "empty",
    "huge",
)


@pytest.fixture(scope="module")
def forgeries(key: NewKey) -> dict[str, str]:
    good = sign(key, claims())
    head, _, sig = good.split(".")
    other = generate_key()
    now = int(time.time())
    public_pem = jwk.construct(key.jwk.model_dump(), "RS256").public_key().to_pem().decode()
    hs_head = b64(json.dumps({"alg": "HS256", "kid": key.kid, "typ": "at+jwt"}).encode())
    hs_body = b64(json.dumps(claims()).encode())
    hs_sig = b64(
        hmac.new(public_pem.encode(), f"{hs_head}.{hs_body}".encode(), hashlib.sha256).digest()
    )
    none_head = b64(json.dumps({"alg": "none", "kid": key.kid, "typ": "at+jwt"}).encode())
    tampered = dict(claims(), roles=["user", "admin"])
    return {
        "alg none": f"{none_head}.{hs_body}.",
        "HS256 with the public key as secret": f"{hs_head}.{hs_body}.{hs_sig}",
        "expired": sign(key, claims(iat=now - 2000, nbf=now - 2000, exp=now - 1100)),
        "wrong iss": sign(key, claims(iss="someone-else")),
        "wrong aud": sign(key, claims(aud="another-platform")),
        "tampered payload": f"{head}.{b64(json.dumps(tampered).encode())}.{sig}",
        "unknown kid": sign(other, claims()),
        "known kid, other key": sign(other, claims(), kid=key.kid),
        "lifetime over 15 minutes": sign(key, claims(exp=now + 3600)),
        "issued in the future": sign(key, claims(iat=now + 600, nbf=now, exp=now + 900)),
        "not valid yet": sign(key, claims(nbf=now + 600)),
        "no exp": sign(key, claims(exp=None)),
        "no typ": sign(key, claims(), typ="JWT"),
        "no jti": sign(key, claims(jti=None)),
        "no roles": sign(key, claims(roles=None)),
        "roles not a list": sign(key, claims(roles="admin")),
        "a refresh token": "ptr.0193.c2VjcmV0",
        "garbage": "not a token",
        "three garbage parts": "a.b.c",
        "empty": "",
        "huge": "a" * 10_000,
    }


def test_the_forgery_list_is_complete(forgeries: dict[str, str]) -> None:
    assert set(forgeries) == set(FORGERIES)


@pytest.mark.parametrize("name", FORGERIES)
def test_every_forgery_is_refused(
    name: str, forgeries: dict[str, str], verifier: TokenVerifier
) -> None:
    with pytest.raises(InvalidToken):
        verifier.verify(forgeries[name])


def test_an_unknown_kid_is_reported_as_such(key: NewKey, verifier: TokenVerifier) -> None:
    with pytest.raises(UnknownSigningKey):
        verifier.verify(sign(generate_key(), claims()))


def test_disabled_users_and_their_peers_are_refused(
    key: NewKey, verifier: TokenVerifier, disabled: DisabledUsers
) -> None:
    user_token = sign(key, claims())
    peer_token = sign(key, claims(sub="peer-9", roles=["peer"], owner="user-1", username=None))
    assert verifier.verify(peer_token).owner == "user-1"
    disabled.add("user-1")
    for token in (user_token, peer_token):
        with pytest.raises(InvalidToken):
            verifier.verify(token)


def test_key_sets_are_replaced_whole(key: NewKey) -> None:
    keys = KeySet()
    other = generate_key()
    keys.replace([key.jwk.model_dump(), other.jwk.model_dump()], version=1)
    assert keys.kids == {key.kid, other.kid}
    keys.replace([other.jwk.model_dump(), {"kty": "oct", "kid": "x", "k": "c2VjcmV0"}], version=2)
    assert keys.kids == {other.kid}  # the symmetric key is never trusted
    assert all("d" not in k for k in keys.jwks()["keys"])


def test_roles() -> None:
    user = Principal("u", frozenset({"user"}), "j", 0, 1)
    admin = Principal("a", frozenset({"user", "admin"}), "j", 0, 1)
    peer = Principal("p", frozenset({"peer"}), "j", 0, 1, owner="u")
    assert get_user(user) is user and get_peer(peer) is peer
    with pytest.raises(InsufficientRole):
        get_user(peer)
    with pytest.raises(InsufficientRole):
        get_peer(user)
    only_admins = require_role("admin")
    assert only_admins(admin) is admin
    for who in (user, peer):
        with pytest.raises(InsufficientRole):
            only_admins(who)


def test_kid_is_the_rfc7638_thumbprint() -> None:
    # RFC 7638, section 3.1.
    n = (
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJ"
        "ECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2"
        "QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQF"
        "h6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
    )
    assert thumbprint(n, "AQAB") == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_public_jwk_holds_no_private_material(key: NewKey) -> None:
    dumped = key.jwk.model_dump()
    assert set(dumped) == {"kty", "kid", "use", "alg", "n", "e"}
    assert public_jwk(jwk.construct(key.private_pem, "RS256").prepared_key).kid == key.kid


def test_retiring_keys_outlive_their_last_token() -> None:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    assert retires_at(t, access_ttl_s=900, slack_s=60) == t + timedelta(seconds=960)


def test_unsafe_configuration_is_refused_outside_development(tmp_path: Path) -> None:
    assert AuthSettings(environment="development").startup_problems() == []
    problems = AuthSettings(environment="test").startup_problems()
    assert len(problems) == 2  # the admin password and the key directory
    assert AuthSettings(environment="production", admin_password="").startup_problems()
    weak = AuthSettings(environment="test", admin_password="password1234", signing_key_dir=tmp_path)
    assert "too weak" in weak.startup_problems()[0]
    safe = AuthSettings(
        environment="production",
        admin_password="a long and unusual admin password",
        signing_key_dir=tmp_path,
        amqp_url="amqp://peertrain:a-long-broker-password@rabbitmq:5672/",
        s3_access_key="peertrain",
        s3_secret_key="a-long-s3-secret",
        mongo_url="mongodb://peertrain:a-long-db-password@mongo:27017/?replicaSet=rs0",
    )
    assert safe.startup_problems() == []
    assert Path(safe.signing_key_dir) != DEFAULT_SIGNING_KEY_DIR
