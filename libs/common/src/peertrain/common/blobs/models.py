"""Values returned by the blob store."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, TypedDict

__all__ = ["BlobDigest", "BlobInfo", "PresignedPost", "PutResult"]


@dataclass(frozen=True, slots=True)
class PutResult:
    """What was stored by an upload.

    Attributes
    ----------
    key
        The object key.
    size
        Bytes stored.
    sha256
        Lowercase hex SHA-256 of the bytes stored, computed on the way up.
    """

    key: str
    size: int
    sha256: str


class BlobDigest(NamedTuple):
    """Size and lowercase hex SHA-256 of a blob, computed while streaming it."""

    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class BlobInfo:
    """One object in a listing.

    Attributes
    ----------
    key
        The object key.
    size
        Size in bytes.
    etag
        The store's ETag, without quotes (not a content hash for multipart objects).
    last_modified
        When the object was written (timezone-aware).
    """

    key: str
    size: int
    etag: str
    last_modified: datetime


class PresignedPost(TypedDict):
    """A browser-style POST upload form: send ``fields`` then the file, to ``url``."""

    url: str
    fields: dict[str, str]
