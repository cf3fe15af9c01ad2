"""Authentication and authorization errors (401 and 403 at the HTTP edge)."""

from __future__ import annotations

from typing import Any

from peertrain.common.errors import Forbidden, Unauthorized

__all__ = ["InsufficientRole", "InvalidToken", "UnknownSigningKey"]


class InvalidToken(Unauthorized):
    """No usable access token: missing, malformed, forged, expired or revoked.

    The message stays generic on purpose: a caller learns that the token is refused,
    not which check refused it (the reason goes to ``reason`` for the logs).
    """

    code = "invalid_token"

    def __init__(self, reason: str = "invalid token", *, detail: Any = None) -> None:
        super().__init__("the access token is missing, invalid or expired", detail=detail)
        self.reason = reason
        self.headers = {"WWW-Authenticate": 'Bearer error="invalid_token"'}


class UnknownSigningKey(InvalidToken):
    """The token names a ``kid`` this process does not know (yet)."""


class InsufficientRole(Forbidden):
    """A valid token whose roles do not allow this action."""

    code = "forbidden"
