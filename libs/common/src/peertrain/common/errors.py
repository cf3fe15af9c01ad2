"""The root of PeerTrain's typed errors.

Every package raises subclasses of :class:`PeerTrainError` that also mix in the builtin
that fits (``LookupError``, ``ValueError``, ...). Only the HTTP edge turns them into
responses (see :mod:`peertrain.common.app.errors`), using ``status_code`` and ``code``.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "Conflict",
    "Forbidden",
    "NotFound",
    "PeerTrainError",
    "QuotaExceeded",
    "Unauthorized",
    "ValidationFailed",
]


class PeerTrainError(Exception):
    """Root of every PeerTrain error.

    Parameters
    ----------
    message
        One human sentence saying what went wrong.
    detail
        Optional machine-readable detail, returned as ``error.detail`` over HTTP.
    """

    status_code: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"

    def __init__(self, message: str, *, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class NotFound(PeerTrainError, LookupError):
    """Something the caller named does not exist (or is not theirs to see)."""

    status_code = 404
    code = "not_found"


class Conflict(PeerTrainError):
    """The request conflicts with the current state."""

    status_code = 409
    code = "conflict"


class ValidationFailed(PeerTrainError, ValueError):
    """The input is well-formed but not acceptable."""

    status_code = 422
    code = "validation_failed"


class Unauthorized(PeerTrainError, PermissionError):
    """No valid credentials were presented."""

    status_code = 401
    code = "unauthorized"


class Forbidden(PeerTrainError, PermissionError):
    """Valid credentials, but not allowed to do this."""

    status_code = 403
    code = "forbidden"


class QuotaExceeded(PeerTrainError, PermissionError):
    """The caller already uses all it may of something (jobs running, datasets, bytes
    stored, peers enrolled); ``detail`` says which (``quota``), its ``limit`` and what
    is ``used``. Waiting alone does not lift it: something has to end or be deleted."""

    status_code = 403
    code = "quota_exceeded"
