"""Blob store errors: one root under `PeerTrainError`, each mixing in a builtin."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from peertrain.common.errors import NotFound, PeerTrainError, ValidationFailed

__all__ = [
    "BlobError",
    "BlobNotFound",
    "BlobStoreUnavailable",
    "BlobTooLarge",
    "InvalidBlobKey",
    "check_key",
]


class BlobError(PeerTrainError):
    """Root of every error raised by `peertrain.common.blobs`."""

    code = "blob_error"


class BlobNotFound(BlobError, NotFound):
    """The key does not exist in the bucket (a `LookupError`).

    Parameters
    ----------
    key
        The missing key.
    """

    code = "blob_not_found"

    def __init__(self, key: str) -> None:
        super().__init__(f"no blob at key {key!r}", detail={"key": key})
        self.key = key


class BlobTooLarge(BlobError, ValueError):
    """A streamed body went past its size limit; nothing was stored.

    Parameters
    ----------
    key
        The key the body was meant for.
    max_bytes
        The limit that was passed.
    """

    status_code = 413
    code = "blob_too_large"

    def __init__(self, key: str, max_bytes: int) -> None:
        super().__init__(
            f"blob {key!r} exceeds the limit of {max_bytes} bytes",
            detail={"key": key, "max_bytes": max_bytes},
        )
        self.key = key
        self.max_bytes = max_bytes


class InvalidBlobKey(BlobError, ValidationFailed):
    """The key or prefix is not acceptable (empty, leading slash, too long)."""

    code = "invalid_blob_key"


def check_key(key: str, *, what: str = "key") -> None:
    """Raise `InvalidBlobKey` for a key (or prefix) S3 cannot name: empty, with a
    leading slash, or longer than 1024 bytes."""
    if not key or key.startswith("/") or len(key.encode()) > 1024:
        raise InvalidBlobKey(f"invalid blob {what}: {key!r}")


class BlobStoreUnavailable(BlobError, ConnectionError):
    """The store or its bucket does not answer (used by readiness checks)."""

    status_code = 503
    code = "blob_store_unavailable"


def error_code(exc: Any) -> str:
    """Return the S3 error code of a botocore ``ClientError`` (``""`` if none)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return ""
    error = response.get("Error")
    if not isinstance(error, dict):
        return ""
    return str(error.get("Code", ""))


NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
"""Codes S3/MinIO use for a missing key (HEAD answers a bare ``404``)."""


@contextmanager
def translated(key: str | None = None) -> Iterator[None]:
    """Turn botocore errors raised inside the block into this module's errors.

    A missing ``key`` becomes `BlobNotFound`; a connection, timeout or broken
    response stream becomes `BlobStoreUnavailable` (transient: worth a retry); any
    other refusal by the store becomes `BlobError` with the S3 code in ``detail``.
    """
    try:
        yield
    except ClientError as exc:
        code = error_code(exc)
        if key is not None and code in NOT_FOUND_CODES:
            raise BlobNotFound(key) from exc
        raise BlobError(
            f"the object store refused the request: {code or exc!r}",
            detail={"s3_code": code, "key": key},
        ) from exc
    except (BotocoreConnectionError, HTTPClientError) as exc:
        raise BlobStoreUnavailable(f"the object store does not answer: {exc}") from exc
