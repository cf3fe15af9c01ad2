"""Peers: enrollment tokens (users), enrollment and login (peer runtimes)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, status

from peertrain.auth.api.deps import AuthDep, no_unknown_query
from peertrain.auth.api.requests import EnrollmentCreate, EnrollRequest, PeerTokenRequest
from peertrain.auth.api.responses import errors
from peertrain.auth.api.views import (
    AccessToken,
    EnrollmentCreated,
    EnrollmentPublic,
    PeerCredentials,
    PeerPublic,
)
from peertrain.auth.store import EnrollmentRecord, PeerRecord
from peertrain.auth.usecases import peers
from peertrain.common.app import Page, PagingDep
from peertrain.common.security import CurrentUser

__all__ = ["router"]

router = APIRouter(tags=["peers"], dependencies=[Depends(no_unknown_query)])


def _enrollment(record: EnrollmentRecord) -> EnrollmentPublic:
    return EnrollmentPublic(
        id=record.id,
        owner_id=record.owner_id,
        created_at=record.created_at,
        expires_at=record.expires_at,
        used_at=record.used_at,
        peer_id=record.peer_id,
    )


def _peer(record: PeerRecord) -> PeerPublic:
    return PeerPublic(
        id=record.id, owner_id=record.owner_id, name=record.name, enrolled_at=record.enrolled_at
    )


@router.post(
    "/peer-enrollments",
    status_code=status.HTTP_201_CREATED,
    summary="Create a one-time enrollment token for a new peer",
    responses=errors(401, 403),
)
async def create_enrollment(
    user: CurrentUser, auth: AuthDep, body: EnrollmentCreate | None = None
) -> EnrollmentCreated:
    """The token is shown once; it expires after an hour unless ``ttl_s`` says otherwise."""
    record, token = await peers.create_enrollment(auth, user, ttl_s=body.ttl_s if body else None)
    return EnrollmentCreated(id=record.id, enrollment_token=token, expires_at=record.expires_at)


@router.get("/peer-enrollments", summary="Your enrollment tokens", responses=errors(401, 403))
async def list_enrollments(
    user: CurrentUser, auth: AuthDep, paging: PagingDep
) -> Page[EnrollmentPublic]:
    """Newest first; the tokens themselves are never shown again."""
    found = await auth.peers.list_enrollments(
        user.subject, limit=paging.fetch, offset=paging.offset
    )
    return Page[EnrollmentPublic].of([_enrollment(r) for r in found], paging)


@router.get(
    "/peer-enrollments/{enrollment_id}",
    summary="One of your enrollment tokens",
    responses=errors(401, 403, 404),
)
async def get_enrollment(enrollment_id: str, user: CurrentUser, auth: AuthDep) -> EnrollmentPublic:
    """Another user's enrollment answers 404."""
    return _enrollment(await peers.get_enrollment(auth, enrollment_id, user))


@router.post(
    "/peers/enroll",
    status_code=status.HTTP_201_CREATED,
    summary="Redeem an enrollment token (peer runtime)",
    responses=errors(401),
)
async def enroll(body: EnrollRequest, auth: AuthDep) -> PeerCredentials:
    """Answers the peer's id and secret; the secret is shown this once."""
    peer, secret = await peers.enroll(auth, body.enrollment_token, body.name)
    return PeerCredentials(
        peer_id=peer.id, peer_secret=secret, owner_id=peer.owner_id, name=peer.name
    )


@router.post("/peers/token", summary="Log a peer in with its secret", responses=errors(401))
async def peer_token(body: PeerTokenRequest, auth: AuthDep) -> AccessToken:
    """An access token with role ``peer`` and ``sub`` = the peer id."""
    issued = await peers.peer_token(auth, body.peer_id, body.peer_secret)
    return AccessToken(access_token=issued.access_token, expires_in=issued.expires_in)


@router.get("/peers", summary="Your peers", responses=errors(401, 403))
async def list_peers(user: CurrentUser, auth: AuthDep, paging: PagingDep) -> Page[PeerPublic]:
    """Peers you enrolled, oldest first."""
    found = await auth.peers.list_peers(user.subject, limit=paging.fetch, offset=paging.offset)
    return Page[PeerPublic].of([_peer(p) for p in found], paging)


@router.get("/peers/{peer_id}", summary="One of your peers", responses=errors(401, 403, 404))
async def get_peer(peer_id: str, user: CurrentUser, auth: AuthDep) -> PeerPublic:
    """Another user's peer answers 404."""
    return _peer(await peers.get_peer(auth, peer_id, user))
