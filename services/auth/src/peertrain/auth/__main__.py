"""``python -m peertrain.auth``: run the auth service with uvicorn."""

from __future__ import annotations

import sys

import uvicorn

from .app import create_auth_app
from .config import AuthSettings

__all__ = ["main"]


def main() -> None:
    """Serve on ``PEERTRAIN_AUTH_HOST``:``PEERTRAIN_AUTH_PORT`` (exit 2 if unsafe)."""
    settings = AuthSettings()
    try:
        app = create_auth_app(settings)
    except ValueError as exc:
        print(f"peertrain-auth: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        proxy_headers=False,
        server_header=False,
    )


if __name__ == "__main__":
    main()
