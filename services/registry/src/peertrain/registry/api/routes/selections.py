"""Selections: pick active peers for a job."""

from __future__ import annotations

from fastapi import APIRouter

from peertrain.common.app.responses import errors
from peertrain.common.security import CurrentUser
from peertrain.registry.api.deps import RegistryDep
from peertrain.registry.api.requests import SelectionRequest
from peertrain.registry.api.views import SelectedPeer
from peertrain.registry.domain.selection import PeerFilters
from peertrain.registry.usecases import queries

__all__ = ["router"]

router = APIRouter(prefix="/selections", tags=["selections"])


@router.post(
    "",
    summary="Pick `count` usable active peers",
    responses=errors(401, 403, 409, why={409: "Fewer than `count` usable active peers match"}),
)
async def select(
    body: SelectionRequest, user: CurrentUser, registry: RegistryDep
) -> list[SelectedPeer]:
    """Usable: active (not stale), registered, not disabled, visible to you."""
    filters = PeerFilters(
        device=body.filters.device,
        min_memory_gb=body.filters.min_memory_gb,
        owner_id=user.subject if body.filters.owner == "me" else None,
    )
    chosen = queries.select(registry, user, body.count, filters, body.prefer, seed=body.seed)
    return [SelectedPeer.of(v) for v in chosen]
