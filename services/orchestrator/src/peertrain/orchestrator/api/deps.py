"""Dependencies of the orchestrator's routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.common.app import extra
from peertrain.orchestrator.usecases import OrchestratorContext

__all__ = ["ORCHESTRATOR_EXTRA", "OrchestratorDep", "get_orchestrator_context"]

ORCHESTRATOR_EXTRA = "orchestrator"


get_orchestrator_context = extra(
    ORCHESTRATOR_EXTRA,
    OrchestratorContext,
    "the orchestrator is starting",
    ready=lambda octx: octx.ready,  # 503 while it replays the log
)

OrchestratorDep = Annotated[OrchestratorContext, Depends(get_orchestrator_context)]
