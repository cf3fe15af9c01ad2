"""Refresh-token rotation: what a presented refresh token means for its family.

A login starts a *family*; each refresh replaces the family's current token with a new
one and remembers the old digest. Presenting a remembered (already used) token means
it was copied: the whole family is revoked (OAuth 2.0 Security BCP, section 4.14).

Except within :data:`RACE_GRACE` of its rotation: the token just replaced, presented
again that soon, is a concurrent refresh by the same client (two tabs, a retry) that
lost the race, and is refused without revoking the family, so the winner's new tokens
stay good (the "reuse interval" of common identity providers). It gets no tokens; a
copy presented later is reuse as before.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum

__all__ = ["RACE_GRACE", "Family", "Verdict", "judge"]

RACE_GRACE = timedelta(seconds=10)
"""How long after a rotation the replaced token is a lost race, not reuse."""


class Verdict(Enum):
    """What to do with a presented refresh token."""

    ROTATE = "rotate"
    """It is the family's current token: issue a new pair."""
    REUSE = "reuse"
    """It was already used: revoke the family and record the event."""
    RACED = "raced"
    """It was replaced moments ago by a concurrent refresh: refuse, revoke nothing."""
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
    rotated_at: datetime | None = None


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
        last = family.previous[-1]
        recent = family.rotated_at is not None and now - family.rotated_at < RACE_GRACE
        if recent and hmac.compare_digest(last, presented):
            return Verdict.RACED
        return Verdict.REUSE
    return Verdict.INVALID
