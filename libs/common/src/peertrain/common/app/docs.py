"""A service's API docs pages, Swagger UI and ReDoc, with their assets served by the
service itself: the pages work offline and load nothing from a CDN.

The assets (``swagger-ui-bundle.js``, ``swagger-ui.css``, ``redoc.standalone.js``, a
favicon) are the files the pinned ``fastapi-offline`` package ships. They are served
under the service's own prefix (``/api/auth/docs/assets/...``), which the gateway already
routes to the service, as it routes its ``/docs`` and ``/openapi.json``.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["DOCS_ASSETS", "install_docs"]

DOCS_ASSETS = Path(str(files("fastapi_offline") / "static"))
"""The folder of the docs pages' scripts, style sheet and favicon."""


def install_docs(app: FastAPI, prefix: str = "") -> None:
    """Add ``{prefix}/docs`` (Swagger UI, with its OAuth2 redirect page), ``{prefix}/redoc``
    and their assets (``{prefix}/docs/assets/``) to ``app``, which must be made with
    ``docs_url=None, redoc_url=None`` (FastAPI's own pages load their assets from a CDN).
    """
    docs, assets = f"{prefix}/docs", f"{prefix}/docs/assets"
    oauth2_redirect = f"{docs}/oauth2-redirect"
    app.mount(assets, StaticFiles(directory=DOCS_ASSETS), name="docs-assets")

    def base(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    @app.get(docs, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = base(request)
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=f"{root}{oauth2_redirect}",
            swagger_js_url=f"{root}{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{assets}/swagger-ui.css",
            swagger_favicon_url=f"{root}{assets}/favicon.png",
            swagger_ui_parameters=app.swagger_ui_parameters,
        )

    @app.get(oauth2_redirect, include_in_schema=False)
    async def swagger_ui_oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(f"{prefix}/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = base(request)
        return get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{assets}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{assets}/favicon.png",
            with_google_fonts=False,
        )
