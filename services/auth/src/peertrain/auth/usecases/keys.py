"""Signing-key lifecycle: first key, rotation, retirement, and the published JWKS.

Order matters so that verifiers are never surprised: a rotation writes the new private
key, records it as ``next``, appends ``auth.keys_rotated`` listing it, and only then
makes it ``active``. So every token a new key signs was preceded by an event that
publishes that key; a verifier that has not heard of it yet finds it in the log.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from peertrain.auth.domain.keys import generate_key, retires_at
from peertrain.auth.store import KeyRecord
from peertrain.auth.store.keys import MissingPrivateKey
from peertrain.common.errors import Conflict
from peertrain.common.eventlog import ConcurrencyError
from peertrain.common.events.auth import AUTH_KEYS_STREAM, KeysRotated, PublicJwk

if TYPE_CHECKING:
    from peertrain.auth.application import AuthApp

__all__ = ["ensure_keys", "published", "retire_due", "rotate"]

log = structlog.get_logger(__name__)


async def published(auth: AuthApp) -> list[PublicJwk]:
    """The public keys to publish (active first, then newer, then retiring)."""
    records = await auth.keys.all()
    order = {"active": 0, "next": 1, "retiring": 2}
    records.sort(key=lambda r: (order.get(r.state, 3), -r.created_at.timestamp()))
    return [r.jwk for r in records]


async def _announce(
    auth: AuthApp, keys: list[PublicJwk], active_kid: str, actor: str | None
) -> None:
    event = auth.event(KeysRotated(keys=tuple(keys), active_kid=active_kid), actor=actor)
    try:  # decided on the stream as it is now; a rotation that races this one wins
        await auth.streams.execute(AUTH_KEYS_STREAM, lambda _: [event], retries=0, refresh=True)
    except ConcurrencyError:
        raise Conflict("another key rotation is in progress; try again") from None
    await auth.security.refresh()


async def rotate(auth: AuthApp, *, actor: str | None) -> KeyRecord:
    """Make a new key the signing key; the old one stays published until it retires.

    Raises
    ------
    Conflict
        If too many keys are still published, or a rotation raced this one.
    """
    records = await auth.keys.all()
    if len(records) >= auth.settings.max_published_keys:
        raise Conflict("too many keys are still published; wait for one to retire")
    old = next((r for r in records if r.state == "active"), None)
    new = await asyncio.to_thread(generate_key)
    now = auth.now()
    auth.keys.write_private(new)
    await auth.keys.insert(new, state="next", now=now)
    keys = [new.jwk] + [r.jwk for r in records]
    try:
        await _announce(auth, keys, new.kid, actor)
    except Conflict:
        await auth.keys.move(new.kid, "next", "retired")
        auth.keys.delete_private(new.kid)
        raise
    await _activate(auth, new.kid, old.kid if old else None)
    log.info("signing key rotated", kid=new.kid, previous=old.kid if old else None)
    record = next((r for r in await auth.keys.all() if r.kid == new.kid), None)
    assert record is not None
    return record


async def _activate(auth: AuthApp, kid: str, old_kid: str | None) -> None:
    now = auth.now()
    if old_kid is not None:
        when = retires_at(
            now,
            access_ttl_s=auth.settings.access_ttl_s,
            slack_s=auth.settings.signer_cache_s + auth.security.settings.leeway_s,
        )
        await auth.keys.move(old_kid, "active", "retiring", retires_at=when)
    await auth.keys.move(kid, "next", "active", activated_at=now)


async def ensure_keys(auth: AuthApp) -> None:
    """At start-up: finish a rotation cut short, make a first key, check the log agrees."""
    records = await auth.keys.all()
    nxt = next((r for r in records if r.state == "next"), None)
    active = next((r for r in records if r.state == "active"), None)
    if nxt is not None:
        await _activate(auth, nxt.kid, active.kid if active else None)
    elif active is None:
        await rotate(auth, actor=None)
        return
    records = await auth.keys.all()
    active = next(r for r in records if r.state == "active")
    if not auth.keys.has_private(active.kid):
        raise MissingPrivateKey(
            f"the active signing key {active.kid} has no private key in "
            f"{auth.settings.signing_key_dir}; restore it, or point the service at a new "
            "database"
        )
    keys = await published(auth)
    if {k.kid for k in keys} != auth.security.keys.kids:
        await _announce(auth, keys, active.kid, None)


async def retire_due(auth: AuthApp) -> int:
    """Unpublish retiring keys whose last token has expired; delete their PEMs."""
    now = auth.now()
    records = await auth.keys.all()
    due = [r for r in records if r.state == "retiring" and r.retires_at and r.retires_at <= now]
    if not due:
        return 0
    for record in due:
        await auth.keys.move(record.kid, "retiring", "retired", retired_at=now)
        auth.keys.delete_private(record.kid)
    active = next((r for r in records if r.state == "active"), None)
    if active is not None:
        await _announce(auth, await published(auth), active.kid, None)
    log.info("signing keys retired", kids=[r.kid for r in due])
    return len(due)
