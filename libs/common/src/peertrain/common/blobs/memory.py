"""The bucket in memory, for one process: the simulation and unit tests.

:class:`MemoryBlobStore` answers what :class:`~.store.BlobStore` answers for reading and
writing objects, with the same checks and typed errors, so the services' own use cases
run on it unchanged. The contract suite (``libs/common/tests/blobstore_contract.py``)
runs against both.
"""

from __future__ import annotations

import builtins
import hashlib
import os
from collections.abc import AsyncGenerator, AsyncIterable
from datetime import UTC, datetime

from peertrain.common.blobs.download import write_stream
from peertrain.common.blobs.errors import BlobNotFound, BlobTooLarge, check_key
from peertrain.common.blobs.models import BlobDigest, BlobInfo, PresignedPost, PutResult
from peertrain.common.blobs.presign import (
    DEFAULT_PRESIGN_EXPIRES_S,
    check_expiry,
    check_size_range,
)
from peertrain.common.blobs.store import DEFAULT_CHUNK_SIZE

__all__ = ["MemoryBlobStore"]


class MemoryBlobStore:
    """The bucket, in memory: objects by key, with the store's checks and typed errors.

    Presigned URLs name ``memory://`` locations (there is no HTTP side): in one process,
    whoever would follow them reads the store directly. The bucket is always there.

    Parameters
    ----------
    bucket
        The bucket's name (in presigned URLs).

    Attributes
    ----------
    objects
        The stored bytes by key.
    """

    def __init__(self, bucket: str = "peertrain") -> None:
        self.bucket = bucket
        self.objects: dict[str, bytes] = {}
        self._written: dict[str, datetime] = {}

    # -- bucket ---------------------------------------------------------------

    async def check(self, *, timeout_s: float = 5.0) -> None:
        """The bucket is this process's memory: it always answers."""

    async def ensure_bucket(self) -> None:
        """The bucket exists as long as this object does."""

    # -- writing --------------------------------------------------------------

    async def put_stream(
        self,
        key: str,
        chunks: AsyncIterable[bytes],
        *,
        content_type: str | None = None,
        max_bytes: int | None = None,
    ) -> PutResult:
        """Store what ``chunks`` yields at ``key``.

        Raises
        ------
        BlobTooLarge
            The body went past ``max_bytes``; the rest of ``chunks`` is not read.
        """
        check_key(key)
        parts: builtins.list[bytes] = []
        size = 0
        async for chunk in chunks:
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                raise BlobTooLarge(key, max_bytes)
            parts.append(bytes(chunk))
        return await self.put_bytes(key, b"".join(parts), content_type)

    async def put_bytes(self, key: str, data: bytes, content_type: str | None = None) -> PutResult:
        """Store ``data`` at ``key`` (replacing what was there)."""
        check_key(key)
        self.objects[key] = bytes(data)
        self._written[key] = datetime.now(UTC)
        return PutResult(key=key, size=len(data), sha256=hashlib.sha256(data).hexdigest())

    async def copy(self, source: str, key: str) -> None:
        """A copy of ``source`` at ``key``.

        Raises
        ------
        BlobNotFound
            No object at ``source``.
        """
        await self.put_bytes(key, self._get(source))

    async def delete(self, key: str) -> None:
        """Delete ``key``; deleting a missing key is not an error."""
        check_key(key)
        self.objects.pop(key, None)
        self._written.pop(key, None)

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every object whose key starts with ``prefix``; return how many.

        An empty prefix is refused: it would empty the bucket.
        """
        check_key(prefix, what="prefix")
        keys = [k for k in self.objects if k.startswith(prefix)]
        for k in keys:
            del self.objects[k]
            self._written.pop(k, None)
        return len(keys)

    # -- reading --------------------------------------------------------------

    def _get(self, key: str) -> bytes:
        check_key(key)
        try:
            return self.objects[key]
        except KeyError:
            raise BlobNotFound(key) from None

    async def get_bytes(self, key: str) -> bytes:
        """The whole object.

        Raises
        ------
        BlobNotFound
            No object at ``key``.
        """
        return self._get(key)

    async def get_stream(
        self, key: str, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> AsyncGenerator[bytes, None]:
        """The object in chunks of at most ``chunk_size`` bytes (`BlobNotFound` at the
        first iteration if there is none)."""
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        data = self._get(key)
        for start in range(0, len(data), chunk_size):
            yield data[start : start + chunk_size]

    async def get_sha256(self, key: str) -> str:
        """The object's SHA-256 (lowercase hex)."""
        return hashlib.sha256(self._get(key)).hexdigest()

    async def download_to(self, key: str, path: str | os.PathLike[str]) -> BlobDigest:
        """Write the object to ``path`` (through a temporary sibling); its size and
        SHA-256."""
        return await write_stream(self.get_stream(key), path)

    async def exists(self, key: str) -> bool:
        """Whether there is an object at ``key``."""
        check_key(key)
        return key in self.objects

    async def iter_objects(self, prefix: str = "") -> AsyncGenerator[BlobInfo, None]:
        """Every object under ``prefix``, in key order."""
        for key in sorted(k for k in self.objects if k.startswith(prefix)):
            data = self.objects[key]
            yield BlobInfo(
                key=key,
                size=len(data),
                etag=hashlib.md5(data, usedforsecurity=False).hexdigest(),  # S3's, one part
                last_modified=self._written[key],
            )

    async def list(self, prefix: str = "") -> builtins.list[BlobInfo]:
        """Every object under ``prefix``, in key order."""
        return [info async for info in self.iter_objects(prefix)]

    # -- presigning -----------------------------------------------------------

    async def presigned_get(self, key: str, *, expires_s: int = DEFAULT_PRESIGN_EXPIRES_S) -> str:
        """A ``memory://`` URL naming the object."""
        check_key(key)
        check_expiry(expires_s)
        return f"memory://{self.bucket}/{key}"

    async def presigned_post(
        self,
        key: str,
        *,
        max_bytes: int,
        expires_s: int = DEFAULT_PRESIGN_EXPIRES_S,
        min_bytes: int = 0,
        content_type: str | None = None,
    ) -> PresignedPost:
        """A form naming where an upload goes (``memory://``)."""
        check_key(key)
        check_expiry(expires_s)
        check_size_range(min_bytes, max_bytes)
        fields = {"key": key}
        if content_type is not None:
            fields["Content-Type"] = content_type
        return {"url": f"memory://{self.bucket}", "fields": fields}
