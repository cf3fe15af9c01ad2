"""The auth API's answers (HTTP response bodies); what it takes is in
:mod:`peertrain.auth.api.requests`."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from peertrain.common.events.auth import PublicJwk

__all__ = [
    "AccessToken",
    "EnrollmentCreated",
    "EnrollmentPublic",
    "Jwks",
    "PeerCredentials",
    "PeerPublic",
    "TokenPair",
    "UserAdminView",
    "UserPublic",
]


class UserPublic(BaseModel):
    """An account as others may see it."""

    id: str
    username: str
    roles: list[str]


class UserAdminView(UserPublic):
    """An account as an admin sees it."""

    disabled: bool
    created_at: datetime


class AccessToken(BaseModel):
    """An access token (peers get no refresh token: they log in with their secret)."""

    access_token: str
    token_type: Literal["bearer"] = "bearer"  # noqa: S105
    expires_in: int = Field(description="seconds until the access token expires")


class TokenPair(AccessToken):
    """An access token and the refresh token that renews it."""

    refresh_token: str


class Jwks(BaseModel):
    """The public keys that verify access tokens (RFC 7517 JWK Set)."""

    keys: list[PublicJwk]


class EnrollmentPublic(BaseModel):
    """An enrollment token's record (the token itself is shown only once)."""

    id: str
    owner_id: str
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None
    peer_id: str | None


class EnrollmentCreated(BaseModel):
    """A new one-time enrollment token: hand it to the peer runtime."""

    id: str
    enrollment_token: str
    expires_at: datetime


class PeerCredentials(BaseModel):
    """A new peer's id and secret; the secret is shown this once and stored hashed."""

    peer_id: str
    peer_secret: str
    owner_id: str
    name: str


class PeerPublic(BaseModel):
    """An enrolled peer."""

    id: str
    owner_id: str
    name: str
    enrolled_at: datetime
