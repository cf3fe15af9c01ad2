"""The probe: another service, built like all of them, that only verifies tokens.

It proves that tokens verify outside auth, from keys learned through events and the
log (``create_app`` + ``install_security``), with no call to auth. Run it with
``python -m peertrain.testkit.auth probe --mongo-db DB --port N``.
"""

from __future__ import annotations

import argparse
from typing import Any

from fastapi import APIRouter, FastAPI

from peertrain.common.app import ServiceContext, create_app
from peertrain.common.security import (
    CurrentPeer,
    CurrentPrincipal,
    SecurityDep,
    install_security,
)
from peertrain.common.settings import ServiceSettings

from .process import PROBE_PREFIX

__all__ = ["create_probe_app", "main"]


def create_probe_app(settings: ServiceSettings) -> FastAPI:
    """A service whose only routes check tokens: what any PeerTrain service does."""
    router = APIRouter()

    @router.get("/whoami")
    async def whoami(who: CurrentPrincipal) -> dict[str, Any]:
        return {"sub": who.subject, "roles": sorted(who.roles), "jti": who.token_id}

    @router.get("/kids")
    async def kids(security: SecurityDep) -> list[str]:
        return sorted(security.keys.kids)

    @router.get("/peer-only")
    async def peer_only(peer: CurrentPeer) -> dict[str, Any]:
        return {"peer_id": peer.subject, "owner": peer.owner}

    async def setup(ctx: ServiceContext) -> None:
        await install_security(ctx)

    return create_app(settings, routers=[router], setup=setup, use_blobs=False)


def main(argv: list[str] | None = None) -> None:
    """``python -m peertrain.testkit.auth probe --mongo-db DB --port N``."""
    parser = argparse.ArgumentParser(prog="python -m peertrain.testkit.auth")
    sub = parser.add_subparsers(dest="command", required=True)
    probe = sub.add_parser("probe", help="run the probe service")
    probe.add_argument("--mongo-db", required=True)
    probe.add_argument("--port", type=int, required=True)
    probe.add_argument("--name", default="authprobe")
    args = parser.parse_args(argv)

    import uvicorn

    settings = ServiceSettings(
        service_name=args.name,
        mongo_db=args.mongo_db,
        port=args.port,
        api_prefix=PROBE_PREFIX,
        relay_enabled=False,
        environment="test",
    )
    uvicorn.run(create_probe_app(settings), host="127.0.0.1", port=args.port, log_config=None)
