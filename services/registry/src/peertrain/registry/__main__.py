"""``python -m peertrain.registry [serve|replay]``: run the registry, or rebuild its
read model from the event log."""

from __future__ import annotations

import argparse
import asyncio
import json

from peertrain.common.app import connect_context
from peertrain.common.app.serve import serve
from peertrain.common.logging import configure_logging

from .app import create_registry_app
from .config import RegistrySettings
from .directory import rebuild
from .store import ReadModelStore

__all__ = ["main"]


async def _replay(settings: RegistrySettings) -> None:
    async with connect_context(settings, use_blobs=False, start_relay=False) as ctx:
        _, result = await rebuild(ctx.log, ReadModelStore(ctx.db))
    print(json.dumps(result.__dict__))


def main(argv: list[str] | None = None) -> None:
    """Serve on ``PEERTRAIN_REGISTRY_HOST``:``PORT``, or ``replay`` (exit 2 if unsafe).

    ``replay`` is for a stopped registry (a running one answers
    ``POST /api/registry/admin/replay``): a running one would keep serving its memory.
    """
    parser = argparse.ArgumentParser(prog="peertrain-registry")
    parser.add_argument("command", nargs="?", default="serve", choices=["serve", "replay"])
    args = parser.parse_args(argv)
    settings = RegistrySettings()
    if args.command == "replay":
        configure_logging(settings.service_name, level=settings.log_level, json=settings.log_json)
        asyncio.run(_replay(settings))
        return
    serve(settings, create_registry_app)


if __name__ == "__main__":
    main()
