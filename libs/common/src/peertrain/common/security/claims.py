"""What an access token says, and the constants every issuer and verifier agree on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "ACCESS_TOKEN_TYPE",
    "ALGORITHMS",
    "DEFAULT_AUDIENCE",
    "DEFAULT_ISSUER",
    "MAX_ACCESS_TTL_S",
    "MAX_TOKEN_LENGTH",
    "ROLE_ADMIN",
    "ROLE_PEER",
    "ROLE_USER",
    "Principal",
]

ALGORITHMS: Final[tuple[str, ...]] = ("RS256",)
"""The only signature algorithm accepted anywhere (pinned: no ``none``, no HMAC)."""

ACCESS_TOKEN_TYPE: Final = "at+jwt"  # noqa: S105 (a type name, not a secret)
"""The ``typ`` header of access tokens (RFC 9068); other JWTs are refused."""

DEFAULT_ISSUER: Final = "peertrain-auth"
DEFAULT_AUDIENCE: Final = "peertrain"
MAX_ACCESS_TTL_S: Final = 900
"""Access tokens live at most 15 minutes; a longer-lived one is refused as forged."""

MAX_TOKEN_LENGTH: Final = 8192
"""Longer "tokens" are refused before any parsing."""

ROLE_USER: Final = "user"
ROLE_ADMIN: Final = "admin"
ROLE_PEER: Final = "peer"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who presented a valid access token.

    Attributes
    ----------
    subject
        ``sub``: the user id, or the peer id for a peer.
    roles
        ``roles``: ``{"user"}``, ``{"user", "admin"}`` or ``{"peer"}``.
    token_id
        ``jti``: unique per token.
    issued_at, expires_at
        ``iat`` and ``exp``, seconds since the epoch.
    username
        A user's name (absent for peers).
    owner
        A peer's owner (the user who enrolled it; absent for users).
    """

    subject: str
    roles: frozenset[str]
    token_id: str
    issued_at: int
    expires_at: int
    username: str | None = None
    owner: str | None = None

    @property
    def is_peer(self) -> bool:
        """Whether this is a peer runtime."""
        return ROLE_PEER in self.roles

    @property
    def is_user(self) -> bool:
        """Whether this is a person (a user, possibly an admin), not a peer."""
        return ROLE_USER in self.roles and not self.is_peer

    @property
    def is_admin(self) -> bool:
        """Whether this user may administer the platform."""
        return ROLE_ADMIN in self.roles and not self.is_peer

    def has_role(self, *roles: str) -> bool:
        """Whether the principal holds any of ``roles``."""
        return any(role in self.roles for role in roles)
