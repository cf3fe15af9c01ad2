"""The one error shape, documented: models and ``responses=`` entries for OpenAPI.

Every route declares the error answers it can give, so the OpenAPI document is the wire
(FastAPI's default ``HTTPValidationError`` is never sent: validation errors use the one
shape too)::

    @router.get("/{id}", responses=errors(401, 404))
    @router.post("", responses=errors(401, 403, 409, why={409: "the dataset is not ready"}))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["ErrorBody", "ErrorResponse", "errors"]


class ErrorBody(BaseModel):
    """What went wrong: a machine-readable ``code``, a sentence, optional detail."""

    code: str
    message: str
    detail: Any = None


class ErrorResponse(BaseModel):
    """The one error shape of every PeerTrain service."""

    error: ErrorBody


WHY: dict[int, str] = {
    400: "The body could not be parsed",
    401: "No valid credentials (missing, invalid or expired)",
    403: "Valid credentials, but not allowed; or a quota is used up (quota_exceeded)",
    404: "Not found (or not yours)",
    408: "The body did not arrive in time (a total deadline, not per read)",
    409: "Conflicts with the current state",
    413: "The body is over the size cap",
    415: "Unsupported media type",
    422: "The request is not valid",
    429: "Too many attempts; retry after the given delay",
    503: "The service is starting (or a dependency is away)",
}

_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}},
    429: {
        "Retry-After": {
            "description": "Seconds until the request may be tried again",
            "schema": {"type": "integer"},
        }
    },
}


def errors(*statuses: int, why: Mapping[int, str] | None = None) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries for ``statuses`` plus 422 and 503, which any route may
    answer; ``why`` overrides a status's description for this route."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in sorted({*statuses, 422, 503}):
        entry: dict[str, Any] = {
            "model": ErrorResponse,
            "description": (why or {}).get(status, WHY[status]),
        }
        if status in _HEADERS:
            entry["headers"] = _HEADERS[status]
        out[status] = entry
    return out
