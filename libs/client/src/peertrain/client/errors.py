"""The client's exception tree: one root, each error one clear line.

``ClientError`` is the root. The API's answers in the one error shape
(``{"error": {"code", "message", "detail"}}``) become ``ApiError``; a server that
cannot be reached becomes ``ApiUnreachable``; a download whose sha256 is not the one
announced raises ``ChecksumMismatch``; the wait helpers raise ``WaitTimeout`` and
``DatasetRejected``.
"""

from __future__ import annotations

from typing import Any

import httpx

from .detail import describe_detail

__all__ = [
    "ApiError",
    "ApiUnreachable",
    "ChecksumMismatch",
    "ClientError",
    "DatasetRejected",
    "NotLoggedIn",
    "WaitTimeout",
]

# Gateway answers that mean "the service behind me is not there", in words a user gets.
_GATEWAY_CODES = {502, 503, 504}
_SERVICES = {
    "/api/auth": "the auth service",
    "/api/registry": "the registry",
    "/api/datasets": "the dataset service",
    "/api/jobs": "the orchestrator",
    "/api/models": "the aggregator",
}


class ClientError(Exception):
    """Root of every error the SDK raises; ``str()`` is one line meant for a user.

    Parameters
    ----------
    message
        What went wrong.
    status
        The HTTP status of the answer, when there was one.
    code
        The machine-readable code of the error shape (``"unauthorized"``, ...).
    detail
        The error's ``detail``, as the API sent it.
    """

    def __init__(
        self, message: str, *, status: int | None = None, code: str = "", detail: Any = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.detail = detail

    def __str__(self) -> str:
        return self.message


class ApiError(ClientError):
    """The API answered an error (4xx or 5xx); ``str()`` is its message, what its
    ``detail`` says (which field, which peer, why), its status and code, on one line.

    Parameters
    ----------
    method, url
        The request that failed.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str,
        detail: Any = None,
        method: str = "",
        url: str = "",
    ) -> None:
        super().__init__(message, status=status, code=code, detail=detail)
        self.method = method
        self.url = url

    def __str__(self) -> str:
        said = describe_detail(self.detail, self.message)
        message = f"{self.message}: {said}" if said else self.message
        line = f"{message} ({self.status} {self.code})"
        if self.status in _GATEWAY_CODES and self.url:
            path = httpx.URL(self.url).path
            service = next((s for p, s in _SERVICES.items() if path.startswith(p)), None)
            message = f"{message}: {service}" if service else message
            line = f"{message} ({self.status} {self.code}: {self.method} {path})"
        return line

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        """Read the one error shape; anything else (an HTML page, a bare text) still
        makes a one-line error."""
        code, message, detail = f"http_{response.status_code}", "", None
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            code = str(error.get("code") or code)
            message = str(error.get("message") or "")
            detail = error.get("detail")
        elif isinstance(body, dict) and isinstance(body.get("detail"), str):
            message = body["detail"]
        if not message:
            message = response.reason_phrase or "request failed"
        request = response.request
        return cls(
            message,
            status=response.status_code,
            code=code,
            detail=detail,
            method=request.method,
            url=str(request.url),
        )


class ApiUnreachable(ClientError, ConnectionError):
    """No answer at all: the server is down, the address is wrong, or it timed out."""

    @classmethod
    def from_exc(cls, base_url: str, exc: httpx.TransportError) -> ApiUnreachable:
        """One line naming the API's address and the transport's reason."""
        reason = str(exc) or type(exc).__name__
        return cls(f"cannot reach the PeerTrain API at {base_url}: {reason}", code="unreachable")


class ChecksumMismatch(ClientError, ValueError):
    """A downloaded file's sha256 is not the one the server announced; the file was
    deleted.

    Parameters
    ----------
    path
        Where the file would have been saved.
    expected, actual
        The announced and the received sha256 (lowercase hex).
    """

    def __init__(self, path: str, expected: str, actual: str) -> None:
        super().__init__(
            f"the download of {path} is corrupt: its sha256 is {actual}, the server "
            f"announced {expected}; nothing was saved, download it again",
            code="checksum_mismatch",
            detail={"path": path, "expected": expected, "actual": actual},
        )
        self.expected, self.actual = expected, actual


class NotLoggedIn(ClientError, PermissionError):
    """No credentials to send (log in first)."""


class WaitTimeout(ClientError, TimeoutError):
    """A wait helper gave up before the awaited state came."""


class DatasetRejected(ClientError):
    """The dataset service rejected an upload during validation.

    Parameters
    ----------
    dataset
        The dataset document, with its ``error``.
    """

    def __init__(self, message: str, dataset: dict[str, Any]) -> None:
        error = dataset.get("error") if isinstance(dataset.get("error"), dict) else {}
        super().__init__(message, code=str((error or {}).get("code") or "rejected"))
        self.dataset = dataset
