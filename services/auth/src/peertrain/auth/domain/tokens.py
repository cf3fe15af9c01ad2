"""Access-token claims and opaque secrets (refresh, enrollment, peer).

Opaque secrets carry 256 bits from :mod:`secrets`; they are stored as SHA-256
digests. A fast digest is enough for such secrets (nothing to brute-force, unlike
passwords), and it lets a look-up be an equality match.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from peertrain.common.ids import new_id

__all__ = [
    "ENROLLMENT_PREFIX",
    "PEER_SECRET_PREFIX",
    "REFRESH_PREFIX",
    "IssuedTokens",
    "access_claims",
    "digest",
    "new_enrollment_token",
    "new_peer_secret",
    "new_refresh_token",
    "split_refresh_token",
]

REFRESH_PREFIX = "ptr"
ENROLLMENT_PREFIX = "pte"
PEER_SECRET_PREFIX = "pts"  # noqa: S105 (a prefix, not a secret)
_MAX_OPAQUE = 512


@dataclass(frozen=True)
class IssuedTokens:
    """What a login, a refresh or a peer login hands out."""

    access_token: str
    expires_in: int
    refresh_token: str | None = None


def access_claims(
    *,
    subject: str,
    roles: tuple[str, ...] | list[str],
    issuer: str,
    audience: str,
    now: int,
    ttl_s: int,
    username: str | None = None,
    owner: str | None = None,
) -> dict[str, Any]:
    """The claims of a new access token (``exp`` = ``now`` + ``ttl_s``, fresh ``jti``)."""
    claims: dict[str, Any] = {
        "iss": issuer,
        "aud": audience,
        "sub": subject,
        "iat": now,
        "nbf": now,
        "exp": now + ttl_s,
        "jti": new_id(),
        "roles": list(roles),
    }
    if username is not None:
        claims["username"] = username
    if owner is not None:
        claims["owner"] = owner
    return claims


def digest(secret: str) -> str:
    """SHA-256 hex digest of an opaque secret (what is stored)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _secret() -> str:
    return secrets.token_urlsafe(32)


def new_refresh_token(family_id: str) -> str:
    """``ptr.<family id>.<secret>``: the family id lets rotation find its session."""
    return f"{REFRESH_PREFIX}.{family_id}.{_secret()}"


def split_refresh_token(token: str) -> str | None:
    """The family id inside a refresh token, or ``None`` if it is not one."""
    if not isinstance(token, str) or len(token) > _MAX_OPAQUE:
        return None
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != REFRESH_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1]


def new_enrollment_token() -> str:
    """A one-time enrollment token."""
    return f"{ENROLLMENT_PREFIX}.{_secret()}"


def new_peer_secret() -> str:
    """A peer's long-lived secret (shown once)."""
    return f"{PEER_SECRET_PREFIX}.{_secret()}"
