"""The orchestrator's HTTP side."""

from .routes import router

ROUTERS = [router]

__all__ = ["ROUTERS"]
