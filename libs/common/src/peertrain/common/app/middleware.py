"""Request ids, correlation-bound logging and HTTP metrics, as a pure ASGI middleware."""

from __future__ import annotations

import re
import time

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from peertrain.common.ids import new_id
from peertrain.common.metrics import HTTP_REQUEST_DURATION, HTTP_REQUESTS

from .errors import error_response

__all__ = ["REQUEST_ID_HEADER", "NulPathGuard", "RequestContextMiddleware"]

REQUEST_ID_HEADER = "x-request-id"
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class RequestContextMiddleware:
    """Bind ``request_id`` for the request's logs, echo it back, and time the request.

    An incoming ``X-Request-ID`` (set by the gateway) is kept if it looks sane; otherwise
    a new one is made. Metrics are labelled by the route *template*, never the raw path.
    """

    def __init__(self, app: ASGIApp, *, service: str) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = dict(scope.get("headers") or []).get(REQUEST_ID_HEADER.encode(), b"")
        request_id = incoming.decode("latin-1")
        if not _SAFE_ID.match(request_id):
            request_id = new_id()
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((REQUEST_ID_HEADER.encode(), request_id.encode()))
                message["headers"] = headers
            await send(message)

        with structlog.contextvars.bound_contextvars(request_id=request_id):
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                route = getattr(scope.get("route"), "path", None) or "unmatched"
                method = scope.get("method", "")
                HTTP_REQUESTS.labels(self.service, method, route, str(status)).inc()
                HTTP_REQUEST_DURATION.labels(self.service, method, route).observe(
                    time.perf_counter() - started
                )


class NulPathGuard:
    """Answer 404 for a path holding a NUL character, before any route runs.

    No resource has one in its name, and the store cannot even be asked: PostgreSQL
    (under FerretDB) refuses NUL in text, so a lookup of such an id would fail with a
    500 instead of a clear "not found".
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "\x00" in scope.get("path", ""):
            response = error_response(404, "not_found", "no such resource")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
