"""``python -m peertrain.orchestrator``: run the orchestrator with uvicorn."""

from __future__ import annotations

from peertrain.common.app.serve import serve

from .app import create_orchestrator_app
from .config import OrchestratorSettings

__all__ = ["main"]


def main() -> None:
    """Serve on ``PEERTRAIN_ORCHESTRATOR_HOST``:``PEERTRAIN_ORCHESTRATOR_PORT``."""
    serve(OrchestratorSettings(), create_orchestrator_app)


if __name__ == "__main__":
    main()
