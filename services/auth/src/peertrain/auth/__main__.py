"""``python -m peertrain.auth``: run the auth service with uvicorn."""

from __future__ import annotations

from peertrain.common.app.serve import serve

from .app import create_auth_app
from .config import AuthSettings

__all__ = ["main"]


def main() -> None:
    """Serve on ``PEERTRAIN_AUTH_HOST``:``PEERTRAIN_AUTH_PORT`` (exit 2 if unsafe)."""
    serve(AuthSettings(), create_auth_app)


if __name__ == "__main__":
    main()
