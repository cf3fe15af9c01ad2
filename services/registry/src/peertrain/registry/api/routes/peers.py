"""Peers: list, one, settings, and a peer's own broker credentials."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit, urlunsplit

from fastapi import APIRouter, Query, Response

from peertrain.common.app import Page, PagingDep
from peertrain.common.app.responses import errors
from peertrain.common.bus import TELEMETRY
from peertrain.common.events.peers import Device
from peertrain.common.security import CurrentPeer, CurrentPrincipal, CurrentUser
from peertrain.registry.api.deps import RegistryDep
from peertrain.registry.api.requests import PeerSettingsUpdate
from peertrain.registry.api.views import BrokerCredentials, PeerPublic
from peertrain.registry.domain.liveness import Status
from peertrain.registry.domain.selection import PeerFilters
from peertrain.registry.usecases import peers, queries

__all__ = ["router"]

router = APIRouter(prefix="/peers", tags=["peers"])


@router.get(
    "",
    summary="Peers you may see: yours, shared ones (all, for an admin)",
    responses=errors(401, 403, why={403: "A peer's token (this is a user's route)"}),
)
async def list_peers(
    user: CurrentUser,
    registry: RegistryDep,
    paging: PagingDep,
    status: Status | None = None,
    device: Device | None = None,
    min_memory_gb: Annotated[float | None, Query(ge=0)] = None,
    owner: Literal["me", "any"] = "any",
) -> Page[PeerPublic]:
    """``min_memory_gb`` is the training device's memory (GPU on cuda peers, else RAM)."""
    filters = PeerFilters(
        status=status,
        device=device,
        min_memory_gb=min_memory_gb,
        owner_id=user.subject if owner == "me" else None,
    )
    found = queries.list_peers(registry, user, filters)
    return Page[PeerPublic].of([PeerPublic.of(v) for v in paging.window(found)], paging)


@router.get(
    "/{peer_id}",
    summary="One peer (a peer may read its own record)",
    responses=errors(401, 404, why={404: "No such peer (or one you may not see)"}),
)
async def get_peer(peer_id: str, who: CurrentPrincipal, registry: RegistryDep) -> PeerPublic:
    """Another user's unshared peer answers 404, like a missing one."""
    return PeerPublic.of(queries.get(registry, who, peer_id))


@router.patch(
    "/{peer_id}",
    summary="Share or disable a peer (its owner or an admin)",
    responses=errors(401, 403, 404, why={403: "Not the peer's owner (or a peer's token)"}),
)
async def update_peer(
    peer_id: str, body: PeerSettingsUpdate, user: CurrentUser, registry: RegistryDep
) -> PeerPublic:
    """A disabled peer stays listed but is never selected."""
    view = await peers.change_settings(
        registry, user, peer_id, shared=body.shared, disabled=body.disabled
    )
    return PeerPublic.of(view)


@router.delete(
    "/{peer_id}",
    status_code=204,
    summary="Remove a peer for good (its owner or an admin): its broker access ends at once",
    response_class=Response,
    responses=errors(401, 403, 404, why={403: "Not the peer's owner (or a peer's token)"}),
)
async def remove_peer(peer_id: str, user: CurrentUser, registry: RegistryDep) -> Response:
    """Appends ``peer.removed``; the peer's RabbitMQ user is deleted and its connections
    closed. A removed peer answers 404 from then on, like one that never existed."""
    await peers.remove(registry, user, peer_id)
    return Response(status_code=204)


def _public_url(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme or "amqp", netloc, parts.path or "/", "", ""))


@router.post(
    "/{peer_id}/broker-credentials",
    summary="The calling peer's own RabbitMQ credentials (a new password each time)",
    responses=errors(
        401,
        403,
        404,
        why={
            403: "Not this peer's own token, or the owner's peer quota is used up",
            503: "The service is starting, or RabbitMQ's management API does not answer",
        },
    ),
)
async def broker_credentials(
    peer_id: str, peer: CurrentPeer, registry: RegistryDep
) -> BrokerCredentials:
    """Only the peer itself may ask (its token's subject must be ``peer_id``)."""
    grant = await peers.broker_credentials(registry, peer, peer_id)
    return BrokerCredentials(
        username=grant.username,
        password=grant.password,
        url=_public_url(registry.settings.peer_amqp_url),
        queue=grant.queue,
        telemetry_exchange=TELEMETRY.name,
        routing_key_prefix=f"peer.{peer_id}.",
    )
