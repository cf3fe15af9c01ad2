"""Auth's typed errors; the HTTP edge maps them to statuses through their bases."""

from __future__ import annotations

from typing import Any, ClassVar

from peertrain.common.errors import Conflict, PeerTrainError, Unauthorized, ValidationFailed

__all__ = [
    "AuthError",
    "InvalidCredentials",
    "InvalidEnrollmentToken",
    "InvalidPeerCredentials",
    "InvalidRefreshToken",
    "InvalidUsername",
    "TooManyAttempts",
    "UsernameTaken",
    "WeakPassword",
]


class AuthError(PeerTrainError):
    """Root of the auth service's errors."""


class InvalidCredentials(AuthError, Unauthorized):
    """Wrong username or password (never says which)."""

    code = "invalid_credentials"

    def __init__(self) -> None:
        super().__init__("invalid username or password")
        self.headers = {"WWW-Authenticate": "Bearer"}


class TooManyAttempts(AuthError):
    """A throttling limit is used up (failed logins, registrations) for this window."""

    status_code: ClassVar[int] = 429
    code: ClassVar[str] = "too_many_requests"

    def __init__(self, retry_after_s: int, what: str = "failed logins") -> None:
        super().__init__(
            f"too many {what}; try again later", detail={"retry_after_s": retry_after_s}
        )
        self.retry_after_s = retry_after_s
        self.headers = {"Retry-After": str(retry_after_s)}


class WeakPassword(AuthError, ValidationFailed):
    """The password breaks the policy."""

    code = "weak_password"

    def __init__(self, problems: list[str]) -> None:
        super().__init__("the password does not meet the policy", detail=problems)
        self.problems = problems


class InvalidUsername(AuthError, ValidationFailed):
    """The username is not acceptable."""

    code = "invalid_username"


class UsernameTaken(AuthError, Conflict):
    """Someone already has this username."""

    code = "username_taken"


class InvalidRefreshToken(AuthError, Unauthorized):
    """Unknown, used, expired or revoked refresh token."""

    code = "invalid_refresh_token"

    def __init__(self, detail: Any = None) -> None:
        super().__init__("the refresh token is invalid, expired or revoked", detail=detail)


class InvalidEnrollmentToken(AuthError, Unauthorized):
    """Unknown, already used or expired enrollment token."""

    code = "invalid_enrollment_token"

    def __init__(self) -> None:
        super().__init__("the enrollment token is invalid, already used or expired")


class InvalidPeerCredentials(AuthError, Unauthorized):
    """Wrong peer id or secret."""

    code = "invalid_peer_credentials"

    def __init__(self) -> None:
        super().__init__("invalid peer id or secret")
