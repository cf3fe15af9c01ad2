"""The orchestrator's routers."""

from . import jobs

ROUTERS = [jobs.router]

__all__ = ["ROUTERS"]
