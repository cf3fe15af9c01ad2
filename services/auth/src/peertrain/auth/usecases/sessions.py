"""Login sessions: password login (throttled), refresh rotation, logout."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import structlog

from peertrain.auth.domain.accounts import canonical_username, could_exist
from peertrain.auth.domain.errors import InvalidCredentials, InvalidRefreshToken, TooManyAttempts
from peertrain.auth.domain.refresh import Family, Verdict, judge
from peertrain.auth.domain.tokens import (
    IssuedTokens,
    digest,
    new_refresh_token,
    split_refresh_token,
)
from peertrain.auth.store import UserRecord
from peertrain.common.events.auth import RefreshReuseDetected
from peertrain.common.ids import new_id

from .throttling import admit

if TYPE_CHECKING:
    from peertrain.auth.application import AuthApp

__all__ = ["login", "logout", "refresh", "start_session"]

log = structlog.get_logger(__name__)


def _family_stream(family_id: str) -> str:
    return f"session:{family_id}"


async def login(auth: AuthApp, username: str, password: str, *, address: str) -> IssuedTokens:
    """Check a password and start a session.

    An unknown username costs one hash too, and fails exactly like a wrong password.
    The attempt takes a slot of both login limits *before* the password is checked, so
    racing guesses get no more checks than the limits allow; a success clears the
    (username, address) attempts and gives the address's slot back.

    Raises
    ------
    TooManyAttempts
        When this (username, address), or this address across usernames, already used
        up its failed attempts (429).
    InvalidCredentials
        For an unknown user, a wrong password or a disabled account (401).
    """
    name = canonical_username(username)
    limits = auth.limits
    user_slot = await admit(auth, limits.login_user, name, address)
    try:
        address_slot = await admit(auth, limits.login_address, address)
    except TooManyAttempts:
        await auth.throttle.release(user_slot)  # refused unchecked: it does not count
        raise
    user = await auth.users.by_username(name) if could_exist(name) else None
    ok, rehashed = await auth.verify_password(password, user.password_hash if user else None)
    if user is None or not ok or user.disabled:
        raise InvalidCredentials()
    await auth.throttle.clear(limits.login_user.key(name, address))
    await auth.throttle.release(address_slot)
    if rehashed is not None:
        await auth.users.set_password_hash(user.id, rehashed)
    return await start_session(auth, user)


async def start_session(auth: AuthApp, user: UserRecord) -> IssuedTokens:
    """A new refresh-token family and the first pair of tokens."""
    family_id = new_id()
    token = new_refresh_token(family_id)
    now = auth.now()
    family = Family(
        id=family_id,
        user_id=user.id,
        current=digest(token),
        expires_at=now + timedelta(seconds=auth.settings.refresh_ttl_s),
    )
    await auth.sessions.create(family, now=now)
    issued = await auth.access_token(subject=user.id, roles=user.roles, username=user.username)
    return IssuedTokens(issued.access_token, issued.expires_in, refresh_token=token)


async def refresh(auth: AuthApp, token: str) -> IssuedTokens:
    """Rotate: the presented refresh token is spent, a new pair is issued.

    Presenting an already-spent token revokes the whole family and appends
    ``auth.refresh_reuse_detected``.

    Raises
    ------
    InvalidRefreshToken
        For any token that does not rotate (401).
    """
    family_id = split_refresh_token(token)
    if family_id is None:
        raise InvalidRefreshToken()
    presented = digest(token)
    for _ in range(2):
        family = await auth.sessions.get(family_id)
        now = auth.now()
        verdict = judge(family, presented, now)
        if verdict is Verdict.REUSE and family is not None:
            await _reuse_detected(auth, family)
        if verdict is not Verdict.ROTATE or family is None:
            raise InvalidRefreshToken()
        user = await auth.users.get(family.user_id)
        if user is None or user.disabled:
            await auth.sessions.revoke(family.id, now=now, reason="user disabled")
            raise InvalidRefreshToken()
        new_token = new_refresh_token(family.id)
        if await auth.sessions.rotate(family.id, presented, digest(new_token), now=now):
            issued = await auth.access_token(
                subject=user.id, roles=user.roles, username=user.username
            )
            return IssuedTokens(issued.access_token, issued.expires_in, refresh_token=new_token)
        # Someone rotated this very token a moment ago: judge again (a lost race, within
        # the grace; reuse, after it).
    raise InvalidRefreshToken()


async def _reuse_detected(auth: AuthApp, family: Family) -> None:
    if not await auth.sessions.revoke(family.id, now=auth.now(), reason="refresh token reuse"):
        return  # already revoked by a concurrent detection: one event is enough
    log.warning("refresh token reuse: family revoked", family_id=family.id, user_id=family.user_id)
    data = RefreshReuseDetected(user_id=family.user_id, family_id=family.id)
    new = auth.streams.new(_family_stream(family.id))  # one event per family, ever
    await auth.streams.save(new, [auth.event(data, actor=family.user_id)])


async def logout(auth: AuthApp, token: str) -> None:
    """Revoke the family of a refresh token (current or already used).

    Answers the same whatever the token (RFC 7009): nothing to learn from it.
    """
    family_id = split_refresh_token(token)
    if family_id is None:
        return
    family = await auth.sessions.get(family_id)
    presented = digest(token)
    if family is None or judge(family, presented, auth.now()) is Verdict.INVALID:
        return
    await auth.sessions.revoke(family.id, now=auth.now(), reason="logout")
