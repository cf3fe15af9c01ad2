"""OpenAPI documentation of error answers, in the one error shape."""

from __future__ import annotations

from typing import Any

from peertrain.auth.models import ErrorResponse

__all__ = ["errors"]

_WHY = {
    400: "The body could not be parsed",
    401: "No valid credentials (missing, invalid or expired)",
    403: "Valid credentials, but not allowed",
    404: "Not found (or not yours)",
    409: "Conflicts with the current state",
    422: "The request is not valid",
    429: "Too many attempts; retry after the given delay",
    503: "The service is starting",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries for these error statuses (400, 422 and 503 always included)."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in sorted({*statuses, 400, 422, 503}):
        entry: dict[str, Any] = {"model": ErrorResponse, "description": _WHY[status]}
        if status == 429:
            entry["headers"] = {
                "Retry-After": {
                    "description": "Seconds until the request may be tried again",
                    "schema": {"type": "integer"},
                }
            }
        if status == 401:
            entry["headers"] = {
                "WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}
            }
        out[status] = entry
    return out
