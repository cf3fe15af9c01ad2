"""HTTP schemas of the auth API (requests and responses)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from peertrain.common.events.auth import PublicJwk
from peertrain.common.text import NO_NUL

from .domain.passwords import MAX_LENGTH, MIN_LENGTH

__all__ = [
    "AccessToken",
    "EnrollRequest",
    "EnrollmentCreate",
    "EnrollmentCreated",
    "EnrollmentPublic",
    "Jwks",
    "PeerCredentials",
    "PeerPublic",
    "PeerTokenRequest",
    "RefreshRequest",
    "RegisterRequest",
    "TokenPair",
    "UserAdminView",
    "UserDisable",
    "UserPublic",
]

_Strict = ConfigDict(extra="forbid")


class RegisterRequest(BaseModel):
    """A new account."""

    model_config = _Strict

    username: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{2,31}$",
        description="3-32 letters, digits, '.', '_' or '-' (stored lower-case)",
        examples=["ada"],
    )
    password: str = Field(
        min_length=MIN_LENGTH,
        max_length=MAX_LENGTH,
        description="at least 12 characters, and not one of the most common breached ones",
    )


class UserPublic(BaseModel):
    """An account as others may see it."""

    id: str
    username: str
    roles: list[str]


class UserAdminView(UserPublic):
    """An account as an admin sees it."""

    disabled: bool
    created_at: datetime


class UserDisable(BaseModel):
    """Why an account is disabled (optional)."""

    model_config = _Strict

    reason: str | None = Field(default=None, max_length=500)


class AccessToken(BaseModel):
    """An access token (peers get no refresh token: they log in with their secret)."""

    access_token: str
    token_type: Literal["bearer"] = "bearer"  # noqa: S105
    expires_in: int = Field(description="seconds until the access token expires")


class TokenPair(AccessToken):
    """An access token and the refresh token that renews it."""

    refresh_token: str


class RefreshRequest(BaseModel):
    """A refresh token to rotate or revoke."""

    model_config = _Strict

    refresh_token: str = Field(min_length=1, max_length=1024, pattern=NO_NUL)


class Jwks(BaseModel):
    """The public keys that verify access tokens (RFC 7517 JWK Set)."""

    keys: list[PublicJwk]


class EnrollmentCreate(BaseModel):
    """Options of a new enrollment token."""

    model_config = _Strict

    ttl_s: int | None = Field(
        default=None, ge=60, le=7 * 24 * 3600, description="lifetime (default one hour)"
    )


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


class EnrollRequest(BaseModel):
    """A peer runtime redeeming its enrollment token."""

    model_config = _Strict

    enrollment_token: str = Field(min_length=1, max_length=512, pattern=NO_NUL)
    name: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._-]*$",
        examples=["gpu-box-1"],
    )


class PeerCredentials(BaseModel):
    """A new peer's id and secret; the secret is shown this once and stored hashed."""

    peer_id: str
    peer_secret: str
    owner_id: str
    name: str


class PeerTokenRequest(BaseModel):
    """A peer logging in."""

    model_config = _Strict

    peer_id: str = Field(min_length=1, max_length=64, pattern=NO_NUL)
    peer_secret: str = Field(min_length=1, max_length=512, pattern=NO_NUL)


class PeerPublic(BaseModel):
    """An enrolled peer."""

    id: str
    owner_id: str
    name: str
    enrolled_at: datetime
