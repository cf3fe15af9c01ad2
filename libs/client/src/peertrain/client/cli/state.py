"""What every command gets: the API address, the config folder, and a client factory."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import httpx
import typer
from rich.console import Console

from peertrain.client.sync import Client
from peertrain.client.tokens import FileTokenStore, default_config_dir

__all__ = ["CliState", "client_version", "state_of"]

DISTRIBUTION = "peertrain-client"


def client_version() -> str:
    """The installed ``peertrain-client``'s version."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree
        return "0+unknown"


@dataclass
class CliState:
    """Global options, set by the root callback.

    ``transport`` lets tests run every command against an ``httpx.MockTransport``
    (``CliRunner().invoke(app, args, obj=CliState(transport=...))``).
    """

    api: str = ""
    debug: bool = False
    config_dir: Path = field(default_factory=default_config_dir)
    transport: httpx.BaseTransport | None = None
    poll_interval: float | None = None

    @property
    def out(self) -> Console:
        """Results (stdout)."""
        return Console(highlight=False, soft_wrap=False)

    @property
    def err(self) -> Console:
        """Progress, notes and errors (stderr)."""
        return Console(stderr=True, highlight=False)

    def token_store(self) -> FileTokenStore:
        """The saved credentials for this API."""
        return FileTokenStore(self.config_dir, api_url=self.api)

    def client(self) -> Client:
        """A client with the saved credentials; refreshed tokens are saved back."""
        return Client(self.api, token_store=self.token_store(), transport=self.transport)


def state_of(ctx: typer.Context) -> CliState:
    """The state the root callback set up."""
    obj = ctx.find_object(CliState)
    if obj is None:  # a command invoked without the root callback (never from the CLI)
        obj = CliState()
        ctx.obj = obj
    return obj
