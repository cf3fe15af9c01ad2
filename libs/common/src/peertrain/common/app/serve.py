"""``python -m peertrain.<service>``: the one way every service is served."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

import uvicorn
from fastapi import FastAPI

from peertrain.common.settings import ServiceSettings

__all__ = ["serve"]

S = TypeVar("S", bound=ServiceSettings)


def serve(settings: S, build: Callable[[S], FastAPI]) -> None:
    """Build the app and serve it with uvicorn on ``settings.host:settings.port``.

    A ``ValueError`` while building (unsafe or inconsistent settings) is printed as one
    line and the process exits with status 2, before anything listens.
    """
    try:
        app = build(settings)
    except ValueError as exc:
        print(f"peertrain-{settings.service_name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,  # structlog owns logging (configure_logging)
        proxy_headers=False,  # client addresses are taken from the gateway explicitly
        server_header=False,
    )
