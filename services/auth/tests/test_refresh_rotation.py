"""Refresh-token rotation decisions and opaque secrets (throttling: test_throttle.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from peertrain.auth.domain.refresh import RACE_GRACE, Family, Verdict, judge
from peertrain.auth.domain.tokens import (
    digest,
    new_enrollment_token,
    new_peer_secret,
    new_refresh_token,
    split_refresh_token,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def family(**changes: object) -> Family:
    base: dict[str, object] = {
        "id": "fam",
        "user_id": "u1",
        "current": digest("t3"),
        "previous": (digest("t1"), digest("t2")),
        "expires_at": NOW + timedelta(days=1),
    }
    base.update(changes)
    return Family(**base)  # type: ignore[arg-type]


def test_current_token_rotates() -> None:
    assert judge(family(), digest("t3"), NOW) is Verdict.ROTATE


def test_a_used_token_is_reuse() -> None:
    assert judge(family(), digest("t1"), NOW) is Verdict.REUSE
    assert judge(family(), digest("t2"), NOW) is Verdict.REUSE


def test_unknown_token_is_invalid_not_reuse() -> None:
    assert judge(family(), digest("guess"), NOW) is Verdict.INVALID
    assert judge(None, digest("t3"), NOW) is Verdict.INVALID


def test_revoked_and_expired_families_refuse_even_the_current_token() -> None:
    assert judge(family(revoked=True), digest("t3"), NOW) is Verdict.REVOKED
    assert judge(family(expires_at=NOW), digest("t3"), NOW) is Verdict.EXPIRED


def test_refresh_tokens_carry_their_family() -> None:
    token = new_refresh_token("0193-abc")
    assert split_refresh_token(token) == "0193-abc"
    assert new_refresh_token("f") != new_refresh_token("f")
    for bad in ("", "ptr.x", "ptr..s", "xyz.f.s", "ptr.f.s.t", "ptr.f." + "s" * 600):
        assert split_refresh_token(bad) is None


def test_opaque_secrets_are_long_random_and_stored_as_digests() -> None:
    enrollment, secret = new_enrollment_token(), new_peer_secret()
    assert enrollment.startswith("pte.") and secret.startswith("pts.")
    assert len(secret) > 40 and new_peer_secret() != secret
    assert digest(secret) == digest(secret) and len(digest(secret)) == 64
    assert secret not in digest(secret)


def test_the_token_just_replaced_is_a_lost_race_for_a_moment_then_reuse() -> None:
    """Concurrent refreshes with one token: the losers are refused without revoking the
    winner's family; the same token presented after the grace is reuse."""
    just = family(rotated_at=NOW - RACE_GRACE / 2)
    assert judge(just, digest("t2"), NOW) is Verdict.RACED  # the token t3 replaced
    assert judge(just, digest("t1"), NOW) is Verdict.REUSE  # an older one: reuse
    assert judge(family(rotated_at=NOW - RACE_GRACE), digest("t2"), NOW) is Verdict.REUSE
    assert judge(family(), digest("t2"), NOW) is Verdict.REUSE  # no rotation time known
