"""The aggregator's routers."""

from . import models

ROUTERS = [models.router]

__all__ = ["ROUTERS"]
