"""Dependencies of the orchestrator's routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.common.app import ContextDep
from peertrain.common.app.deps import ServiceUnavailable

from ..service import Orchestrator

__all__ = ["ORCHESTRATOR_EXTRA", "OrchestratorDep", "get_orchestrator"]

ORCHESTRATOR_EXTRA = "orchestrator"


def get_orchestrator(ctx: ContextDep) -> Orchestrator:
    """The running orchestrator (503 while it replays the log)."""
    orch = ctx.extras.get(ORCHESTRATOR_EXTRA)
    if not isinstance(orch, Orchestrator) or not orch.ready:
        raise ServiceUnavailable("the orchestrator is starting")
    return orch


OrchestratorDep = Annotated[Orchestrator, Depends(get_orchestrator)]
