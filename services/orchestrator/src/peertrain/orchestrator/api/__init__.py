"""The orchestrator's HTTP edge."""

from .routes import ROUTERS

__all__ = ["ROUTERS"]
