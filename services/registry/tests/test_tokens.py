"""The verified-token cache: one signature check per token, re-checks what can change."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest
from jose import jwt

from peertrain.auth.domain.keys import generate_key
from peertrain.common.clock import ManualClock
from peertrain.common.security import (
    ACCESS_TOKEN_TYPE,
    InvalidToken,
    Security,
    SecuritySettings,
)
from peertrain.registry.usecases.tokens import TokenCache


def signed(key: Any, *, sub: str = "p", owner: str = "u", ttl: int = 600) -> str:
    now = int(time.time())
    claims = {
        "iss": "peertrain-auth",
        "aud": "peertrain",
        "sub": sub,
        "iat": now,
        "nbf": now,
        "exp": now + ttl,
        "jti": f"j{time.perf_counter_ns()}",
        "roles": ["peer"],
        "owner": owner,
    }
    headers = {"kid": key.kid, "typ": ACCESS_TOKEN_TYPE}
    return str(jwt.encode(claims, key.private_pem.decode(), algorithm="RS256", headers=headers))


@pytest.fixture
def setup() -> tuple[Security, Any]:
    key = generate_key()
    security = Security(None)
    security.keys.replace([key.jwk.model_dump()], version=1)
    return security, key


def test_second_sight_is_a_hit_and_the_same_principal(setup: tuple[Security, Any]) -> None:
    security, key = setup
    cache = TokenCache(security)
    token = signed(key)
    first = cache.verify(token)
    assert cache.verify(token) is first
    assert (cache.hits, cache.misses) == (1, 1)


def test_expiry_disabled_owner_and_key_changes_are_rechecked(
    setup: tuple[Security, Any],
) -> None:
    _, key = setup
    clock = ManualClock(datetime.now(UTC))
    security = Security(None, SecuritySettings(leeway_s=0), clock=clock)
    security.keys.replace([key.jwk.model_dump()], version=1)
    cache = TokenCache(security, clock=clock)
    token = signed(key, ttl=1)
    cache.verify(token)
    clock.advance(2.1)  # expired (whole seconds): verified again, and refused
    with pytest.raises(InvalidToken) as refused:
        cache.verify(token)
    assert (refused.value.reason, cache.misses) == ("expired", 2)
    other = signed(key, owner="bad")
    cache.verify(other)
    security.disabled.add("bad")
    with pytest.raises(InvalidToken):
        cache.verify(other)
    fresh = signed(key)
    cache.verify(fresh)
    security.keys.replace([generate_key().jwk.model_dump()], version=2)  # key retired
    with pytest.raises(InvalidToken):
        cache.verify(fresh)


def test_bad_tokens_are_refused_and_not_remembered(setup: tuple[Security, Any]) -> None:
    security, _ = setup
    cache = TokenCache(security)
    for _ in range(2):
        with pytest.raises(InvalidToken):
            cache.verify("not-a-token")
    assert len(cache) == 0


def test_the_cache_is_bounded(setup: tuple[Security, Any]) -> None:
    security, key = setup
    cache = TokenCache(security, max_size=2)
    for i in range(5):
        cache.verify(signed(key, sub=f"p{i}"))
    assert len(cache) <= 2
