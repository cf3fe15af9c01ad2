"""Dependencies of the orchestrator's routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.common.app import application_dep
from peertrain.orchestrator.application import OrchestratorApp

__all__ = ["OrchestratorDep", "get_orchestrator"]


get_orchestrator = application_dep(
    OrchestratorApp,
    "the orchestrator is starting",
    ready=lambda app: app.ready,  # 503 while it replays the log
)

OrchestratorDep = Annotated[OrchestratorApp, Depends(get_orchestrator)]
