"""The dataset service's routers."""

from . import datasets

ROUTERS = [datasets.router]

__all__ = ["ROUTERS"]
