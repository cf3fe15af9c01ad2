"""The registry's HTTP side."""

from .routes import admin, peers, selections

ROUTERS = [peers.router, selections.router, admin.router]

__all__ = ["ROUTERS"]
