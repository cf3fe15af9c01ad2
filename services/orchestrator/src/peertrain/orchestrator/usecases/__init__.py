"""The orchestrator's use cases (the shell around :mod:`peertrain.orchestrator.domain`)."""

from .context import OrchestratorContext

__all__ = ["OrchestratorContext"]
