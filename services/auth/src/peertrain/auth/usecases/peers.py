"""Peer enrollment: one-time tokens from users, peer secrets, peer access tokens."""

from __future__ import annotations

import hmac
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from peertrain.auth.domain.errors import InvalidEnrollmentToken, InvalidPeerCredentials
from peertrain.auth.domain.tokens import IssuedTokens, digest, new_enrollment_token, new_peer_secret
from peertrain.auth.store import EnrollmentRecord, PeerRecord
from peertrain.common.errors import NotFound
from peertrain.common.events.peers import PeerEnrolled, PeerRemoved, peer_stream
from peertrain.common.ids import new_id
from peertrain.common.security import ROLE_PEER, Principal

if TYPE_CHECKING:
    from peertrain.auth.application import AuthApp

__all__ = [
    "create_enrollment",
    "enroll",
    "get_enrollment",
    "get_peer",
    "peer_token",
    "record_pending",
    "removed",
]

PEER_ROLES: tuple[str, ...] = (ROLE_PEER,)


async def create_enrollment(
    auth: AuthApp, owner: Principal, *, ttl_s: int | None = None
) -> tuple[EnrollmentRecord, str]:
    """A one-time enrollment token for a peer of ``owner`` (shown once)."""
    token = new_enrollment_token()
    now = auth.now()
    record = EnrollmentRecord(
        id=new_id(),
        owner_id=owner.subject,
        created_at=now,
        expires_at=now + timedelta(seconds=ttl_s or auth.settings.enrollment_ttl_s),
    )
    await auth.peers.create_enrollment(record, token_hash=digest(token))
    return record, token


def _visible(owner_id: str, who: Principal) -> bool:
    return owner_id == who.subject or who.is_admin


async def get_enrollment(auth: AuthApp, enrollment_id: str, who: Principal) -> EnrollmentRecord:
    """One enrollment of the caller (another user's answers 404, like a missing one)."""
    record = await auth.peers.get_enrollment(enrollment_id)
    if record is None or not _visible(record.owner_id, who):
        raise NotFound("no such enrollment")
    return record


async def get_peer(auth: AuthApp, peer_id: str, who: Principal) -> PeerRecord:
    """One peer of the caller (another user's answers 404, like a missing one)."""
    peer = await auth.peers.get_peer(peer_id)
    if peer is None or not _visible(peer.owner_id, who):
        raise NotFound("no such peer")
    return peer


async def enroll(auth: AuthApp, token: str, name: str) -> tuple[PeerRecord, str]:
    """Redeem an enrollment token: a new peer of the token's owner, and its secret.

    Raises
    ------
    InvalidEnrollmentToken
        If the token is unknown, already used, expired, or its owner is disabled.
    """
    token_hash = digest(token)
    pending = await auth.peers.enrollment_by_token(token_hash)
    if pending is None:
        raise InvalidEnrollmentToken()
    owner = await auth.users.get(pending.owner_id)
    if owner is None or owner.disabled:
        raise InvalidEnrollmentToken()
    peer_id = new_id()
    now = auth.now()
    claimed = await auth.peers.claim_enrollment(token_hash, peer_id=peer_id, now=now)
    if claimed is None:
        raise InvalidEnrollmentToken()
    secret = new_peer_secret()
    peer = PeerRecord(
        id=peer_id,
        owner_id=claimed.owner_id,
        name=name,
        secret_hash=digest(secret),
        enrolled_at=now,
    )
    event_id = new_id()
    await auth.peers.insert_peer(peer, event_id=event_id)
    await _record_enrolled(auth, peer, event_id)
    return peer, secret


async def _record_enrolled(auth: AuthApp, peer: PeerRecord, event_id: str) -> None:
    """``peer.enrolled`` as the stream's first event (again: the same event, stored once);
    a stream that has other events already is left as it is."""
    data = PeerEnrolled(peer_id=peer.id, owner_id=peer.owner_id, name=peer.name)
    event = auth.event(data, actor=peer.owner_id, event_id=event_id)
    await auth.streams.execute(
        peer_stream(peer.id), lambda version: [] if version else [event], new=True
    )
    await auth.peers.event_recorded(peer.id)


async def record_pending(auth: AuthApp) -> int:
    """Append the ``peer.enrolled`` events a crash may have left out (idempotent)."""
    pending = await auth.peers.pending()
    for peer, event_id in pending:
        await _record_enrolled(auth, peer, event_id)
    return len(pending)


async def peer_token(auth: AuthApp, peer_id: str, secret: str) -> IssuedTokens:
    """An access token for a peer (role ``peer``, ``sub`` = peer id, ``owner`` claim).

    Raises
    ------
    InvalidPeerCredentials
        Wrong id or secret, the peer is removed, or the owner is disabled.
    """
    peer = await auth.peers.get_peer(peer_id)
    presented = digest(secret)
    if peer is None or not hmac.compare_digest(peer.secret_hash, presented):
        raise InvalidPeerCredentials()
    if peer.removed_at is not None:
        raise InvalidPeerCredentials()
    owner = await auth.users.get(peer.owner_id)
    if owner is None or owner.disabled:
        raise InvalidPeerCredentials()
    return await auth.access_token(subject=peer.id, roles=PEER_ROLES, owner=peer.owner_id)


async def removed(auth: AuthApp, event: PeerRemoved, *, at: datetime) -> None:
    """``peer.removed`` (from the registry): the peer gets no token from now on (tokens
    it holds expire within their lifetime; the registry refuses its telemetry)."""
    await auth.peers.mark_removed(event.peer_id, at=at)
