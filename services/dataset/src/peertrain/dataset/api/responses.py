"""OpenAPI documentation of error answers, in the one error shape."""

from __future__ import annotations

from typing import Any

from peertrain.dataset.models import ErrorResponse

__all__ = ["errors"]

_WHY = {
    401: "No valid credentials",
    403: "Valid credentials, but not a user; or a quota is used up (quota_exceeded)",
    404: "Not found (or not yours)",
    408: "The body did not arrive in time (a total deadline, not per read)",
    409: "Not in a state that allows this",
    413: "The file is over the size cap",
    415: "Not multipart/form-data, or the file is neither CSV nor ZIP",
    422: "The request or the file is not acceptable",
    503: "The service is starting",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries for these statuses (401, 403, 422 and 503 always included)."""
    return {
        status: {"model": ErrorResponse, "description": _WHY[status]}
        for status in sorted({*statuses, 401, 403, 422, 503})
    }
