"""Operations: rebuild the read model from the log."""

from __future__ import annotations

from fastapi import APIRouter

from peertrain.common.app.responses import errors
from peertrain.common.security import AdminUser
from peertrain.registry.api.deps import RegistryDep
from peertrain.registry.api.views import ReplayResult
from peertrain.registry.usecases import readmodel

__all__ = ["router"]

router = APIRouter(prefix="/admin", tags=["admin"])


@router.post(
    "/replay",
    summary="Drop the read model and rebuild it from the event log",
    responses=errors(401, 403),
)
async def replay(admin: AdminUser, registry: RegistryDep) -> ReplayResult:
    """Liveness is kept (it lives in memory); everything else comes back from the log."""
    result = await readmodel.replay(registry)
    return ReplayResult(
        peers=result.peers, events=result.events, position=result.position, took_s=result.took_s
    )
