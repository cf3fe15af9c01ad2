"""Auth events (appended by the auth service): signing keys and refresh-token abuse."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .catalogue import event_type
from .envelope import EventData

__all__ = [
    "AUTH_KEYS_ROTATED",
    "AUTH_KEYS_STREAM",
    "AUTH_REFRESH_REUSE_DETECTED",
    "KeysRotated",
    "PublicJwk",
    "RefreshReuseDetected",
]

AUTH_KEYS_ROTATED = "auth.keys_rotated"
AUTH_REFRESH_REUSE_DETECTED = "auth.refresh_reuse_detected"

AUTH_KEYS_STREAM = "auth:keys"
"""The one stream of ``auth.keys_rotated`` events; its ``seq`` orders the key sets."""


class PublicJwk(BaseModel):
    """A public RSA signing key as a JSON Web Key (RFC 7517); never private material."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kty: Literal["RSA"] = "RSA"
    kid: str = Field(min_length=1, max_length=128)
    use: Literal["sig"] = "sig"
    alg: Literal["RS256"] = "RS256"
    n: str = Field(min_length=1)
    e: str = Field(min_length=1)


@event_type(AUTH_KEYS_ROTATED)
class KeysRotated(EventData):
    """The set of public keys that verify access tokens changed (the whole JWKS).

    A new key was added (it signs from now on) or a retired one was dropped (the last
    token it signed has expired). The event carries the complete set, so a consumer
    replaces what it knew.
    """

    keys: tuple[PublicJwk, ...]
    active_kid: str


@event_type(AUTH_REFRESH_REUSE_DETECTED)
class RefreshReuseDetected(EventData):
    """An already-used refresh token was presented: its whole family is now revoked."""

    user_id: str
    family_id: str
