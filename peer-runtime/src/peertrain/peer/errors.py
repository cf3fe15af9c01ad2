"""The peer runtime's errors: one root, each mixing in the builtin that fits."""

from __future__ import annotations

__all__ = [
    "ApiError",
    "ChecksumMismatch",
    "ConfigError",
    "DownloadFailed",
    "PeerError",
    "ShardInvalid",
    "TaskError",
    "UploadFailed",
]


class PeerError(Exception):
    """Root of the runtime's errors."""


class ConfigError(PeerError, ValueError):
    """A config file is missing, unreadable or too open."""


class ApiError(PeerError, ConnectionError):
    """The platform refused a request (``status`` 4xx) or could not be reached."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def retryable(self) -> bool:
        """Worth retrying later: unreachable, or a server-side (5xx) or rate-limit answer."""
        return self.status is None or self.status >= 500 or self.status == 429


class TaskError(PeerError, RuntimeError):
    """A task could not be done (reported to the platform as ``failed``)."""


class DownloadFailed(TaskError):
    """A presigned GET failed, or sent more bytes than announced."""


class ChecksumMismatch(DownloadFailed, ValueError):
    """Downloaded bytes do not have the announced sha256 or size."""


class ShardInvalid(TaskError, ValueError):
    """The shard is not an ``.npz`` with float ``X`` and integer ``y``."""


class UploadFailed(TaskError):
    """The presigned POST of the update was refused, or the update is over its cap."""
