"""The one JSON error shape, everywhere: ``{"error": {"code", "message", "detail"}}``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from peertrain.common.errors import PeerTrainError

__all__ = ["error_body", "error_response", "install_error_handlers"]

log = structlog.get_logger(__name__)

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_failed",
    429: "too_many_requests",
    503: "unavailable",
}


def error_body(code: str, message: str, detail: Any = None) -> dict[str, Any]:
    """The error document."""
    return {"error": {"code": code, "message": message, "detail": jsonable_encoder(detail)}}


def error_response(
    status: int,
    code: str,
    message: str,
    detail: Any = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """A JSON response in the one error shape."""
    return JSONResponse(error_body(code, message, detail), status_code=status, headers=headers)


async def _on_peertrain_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, PeerTrainError)
    if exc.status_code >= 500:
        log.error("request failed", error=repr(exc))
    headers = getattr(exc, "headers", None)
    return error_response(exc.status_code, exc.code, exc.message, exc.detail, headers)


async def _on_http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    detail = None if isinstance(exc.detail, str) else exc.detail
    return error_response(exc.status_code, code, message, detail, exc.headers)


async def _on_validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg"), "type": e.get("type")}
        for e in exc.errors()
    ]
    return error_response(422, "validation_failed", "the request is not valid", errors)


async def _on_unexpected(_: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error", error=repr(exc))
    return error_response(500, "internal_error", "internal server error")


def install_error_handlers(app: FastAPI) -> None:
    """Make every error leave the service in the one shape."""
    app.add_exception_handler(PeerTrainError, _on_peertrain_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(Exception, _on_unexpected)
