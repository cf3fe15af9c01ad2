"""Refresh-token rotation: what a presented refresh token means for its family.

A login starts a *family*; each refresh replaces the family's current token with a new
one and remembers the old digest. Presenting a remembered (already used) token means
it was copied: the whole family is revoked (OAuth 2.0 Security BCP, section 4.14).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

__all__ = ["Family", "Verdict", "judge"]


class Verdict(Enum):
    """What to do with a presented refresh token."""

    ROTATE = "rotate"
    """It is the family's current token: issue a new pair."""
    REUSE = "reuse"
    """It was already used: revoke the family and record the event."""
    REVOKED = "revoked"
    """The family was revoked (logout, reuse, disabled user)."""
    EXPIRED = "expired"
    """The family outlived its lifetime."""
    INVALID = "invalid"
    """Not a token of this family (or no such family)."""


@dataclass(frozen=True)
class Family:
    """A login session's refresh-token family, as stored."""

    id: str
    user_id: str
    current: str
    expires_at: datetime
    previous: tuple[str, ...] = field(default=())
    revoked: bool = False


def judge(family: Family | None, presented: str, now: datetime) -> Verdict:
    """Decide about a refresh token whose digest is ``presented``."""
    if family is None:
        return Verdict.INVALID
    if family.revoked:
        return Verdict.REVOKED
    if now >= family.expires_at:
        return Verdict.EXPIRED
    if hmac.compare_digest(family.current, presented):
        return Verdict.ROTATE
    if any(hmac.compare_digest(old, presented) for old in family.previous):
        return Verdict.REUSE
    return Verdict.INVALID
