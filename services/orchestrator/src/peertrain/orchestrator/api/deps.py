"""Dependencies of the orchestrator's routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.common.app import ContextDep
from peertrain.common.app.deps import ServiceUnavailable
from peertrain.orchestrator.usecases import OrchestratorContext

__all__ = ["ORCHESTRATOR_EXTRA", "OrchestratorDep", "get_orchestrator_context"]

ORCHESTRATOR_EXTRA = "orchestrator"


def get_orchestrator_context(ctx: ContextDep) -> OrchestratorContext:
    """The orchestrator's use-case context (503 while it replays the log)."""
    octx = ctx.extras.get(ORCHESTRATOR_EXTRA)
    if not isinstance(octx, OrchestratorContext) or not octx.ready:
        raise ServiceUnavailable("the orchestrator is starting")
    return octx


OrchestratorDep = Annotated[OrchestratorContext, Depends(get_orchestrator_context)]
