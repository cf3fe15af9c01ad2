"""The ``peertrain`` command line (typer + rich) on top of :class:`peertrain.client.Client`."""

from .app import app, main
from .state import CliState

__all__ = ["CliState", "app", "main"]
