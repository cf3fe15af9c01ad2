"""What the auth API takes (HTTP request bodies and forms); its answers are in
:mod:`peertrain.auth.api.views`."""

from __future__ import annotations

from typing import Annotated

from fastapi import Form
from pydantic import BaseModel, ConfigDict, Field

from peertrain.common.text import NO_NUL

from ..domain.passwords import MAX_LENGTH, MIN_LENGTH

__all__ = [
    "EnrollRequest",
    "EnrollmentCreate",
    "PasswordForm",
    "PeerTokenRequest",
    "RefreshRequest",
    "RegisterRequest",
    "UserDisable",
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


class UserDisable(BaseModel):
    """Why an account is disabled (optional)."""

    model_config = _Strict

    reason: str | None = Field(default=None, max_length=500)


class PasswordForm:
    """The OAuth2 password grant form (RFC 6749, 4.3.2); extra fields are ignored."""

    def __init__(
        self,
        username: Annotated[str, Form(min_length=1, max_length=256)],
        password: Annotated[str, Form(min_length=1, max_length=1024)],
        grant_type: Annotated[str, Form(pattern="^password$")] = "password",
    ) -> None:
        self.username = username
        self.password = password
        self.grant_type = grant_type


class RefreshRequest(BaseModel):
    """A refresh token to rotate or revoke."""

    model_config = _Strict

    refresh_token: str = Field(min_length=1, max_length=1024, pattern=NO_NUL)


class EnrollmentCreate(BaseModel):
    """Options of a new enrollment token."""

    model_config = _Strict

    ttl_s: int | None = Field(
        default=None, ge=60, le=7 * 24 * 3600, description="lifetime (default one hour)"
    )


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


class PeerTokenRequest(BaseModel):
    """A peer logging in."""

    model_config = _Strict

    peer_id: str = Field(min_length=1, max_length=64, pattern=NO_NUL)
    peer_secret: str = Field(min_length=1, max_length=512, pattern=NO_NUL)
