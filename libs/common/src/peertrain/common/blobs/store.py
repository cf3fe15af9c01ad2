"""`BlobStore`: PeerTrain's S3 bucket behind a small async API (aiobotocore)."""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import os
from collections.abc import AsyncGenerator, AsyncIterable
from contextlib import AsyncExitStack, aclosing
from datetime import UTC
from types import TracebackType
from typing import Any, Self

from botocore.exceptions import BotoCoreError, ClientError

from peertrain.common.blobs.client import open_clients
from peertrain.common.blobs.config import BlobStoreConfig
from peertrain.common.blobs.download import digest_stream, write_stream
from peertrain.common.blobs.errors import (
    BlobError,
    BlobNotFound,
    BlobStoreUnavailable,
    check_key,
    error_code,
    translated,
)
from peertrain.common.blobs.models import BlobDigest, BlobInfo, PresignedPost, PutResult
from peertrain.common.blobs.presign import DEFAULT_PRESIGN_EXPIRES_S, presign_get, presign_post
from peertrain.common.blobs.upload import stream_upload

__all__ = ["DEFAULT_CHUNK_SIZE", "BlobStore"]

DEFAULT_CHUNK_SIZE = 1024 * 1024
_DELETE_BATCH = 1000  # DeleteObjects takes at most 1000 keys
_NOT_OPEN = "BlobStore is not open: use `async with BlobStore(config) as blobs:`"


class BlobStore:
    """The bucket, through one aiobotocore client owned by an async context.

    Signature v4 and path-style addressing, so presigned URLs work against MinIO on
    ``127.0.0.1:9000`` as they do against S3.

    Parameters
    ----------
    config
        Endpoint, credentials, region, bucket and tuning values.

    Examples
    --------
    >>> async with BlobStore(BlobStoreConfig()) as blobs:  # doctest: +SKIP
    ...     result = await blobs.put_stream("datasets/d1/raw.csv", request.stream())
    """

    _list_page_size = 1000  # S3's maximum; tests lower it to exercise paging

    def __init__(self, config: BlobStoreConfig) -> None:
        self.config = config
        self.bucket = config.bucket
        self._stack: AsyncExitStack | None = None
        self._client: Any = None
        self._presigner: Any = None

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise RuntimeError("BlobStore is already open")
        stack = AsyncExitStack()
        try:
            self._client, self._presigner = await open_clients(stack, self.config)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        self._client = self._presigner = None
        if stack is not None:
            await stack.aclose()

    @property
    def client(self) -> Any:
        """The open aiobotocore S3 client (raises `RuntimeError` when closed)."""
        if self._client is None:
            raise RuntimeError(_NOT_OPEN)
        return self._client

    @property
    def _presign_client(self) -> Any:
        if self._presigner is None:
            raise RuntimeError(_NOT_OPEN)
        return self._presigner

    # -- bucket ---------------------------------------------------------------

    async def check(self, *, timeout_s: float = 5.0) -> None:
        """Raise `BlobStoreUnavailable` unless the bucket answers a ``HeadBucket``."""
        try:
            async with asyncio.timeout(timeout_s):
                await self.client.head_bucket(Bucket=self.bucket)
        except (ClientError, BotoCoreError, OSError, TimeoutError) as exc:
            raise BlobStoreUnavailable(
                f"bucket {self.bucket!r} at {self.config.endpoint_url} does not answer: {exc!r}"
            ) from exc

    async def ensure_bucket(self) -> None:
        """Create the bucket if it does not exist (idempotent)."""
        try:
            await self.client.head_bucket(Bucket=self.bucket)
            return
        except ClientError as exc:
            if error_code(exc) not in {"404", "NoSuchBucket", "NotFound"}:
                raise
        try:
            await self.client.create_bucket(Bucket=self.bucket)
        except ClientError as exc:
            if error_code(exc) not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
                raise

    # -- writing --------------------------------------------------------------

    async def put_stream(
        self,
        key: str,
        chunks: AsyncIterable[bytes],
        *,
        content_type: str | None = None,
        max_bytes: int | None = None,
    ) -> PutResult:
        """Stream ``chunks`` to ``key`` with a bounded buffer (about one part).

        Bodies up to one part go up in a single request, larger ones as a multipart
        upload. Any failure aborts the multipart upload: nothing is left behind.

        Raises
        ------
        BlobTooLarge
            The body went past ``max_bytes``; the rest of ``chunks`` is not read.
        """
        check_key(key)
        with translated():
            return await stream_upload(
                self.client,
                self.bucket,
                key,
                chunks,
                part_size=self.config.part_size,
                content_type=content_type,
                max_bytes=max_bytes,
            )

    async def put_bytes(self, key: str, data: bytes, content_type: str | None = None) -> PutResult:
        """Store ``data`` at ``key`` in one request."""
        check_key(key)
        extra = {"ContentType": content_type} if content_type else {}
        with translated():
            await self.client.put_object(Bucket=self.bucket, Key=key, Body=data, **extra)
        return PutResult(key=key, size=len(data), sha256=hashlib.sha256(data).hexdigest())

    async def copy(self, source: str, key: str) -> None:
        """A server-side copy of ``source`` at ``key`` (the same bytes; nothing travels
        through this process).

        Raises
        ------
        BlobNotFound
            No object at ``source``.
        """
        check_key(source)
        check_key(key)
        with translated(source):
            await self.client.copy_object(
                Bucket=self.bucket, Key=key, CopySource={"Bucket": self.bucket, "Key": source}
            )

    async def delete(self, key: str) -> None:
        """Delete ``key``; deleting a missing key is not an error."""
        check_key(key)
        with translated():
            await self.client.delete_object(Bucket=self.bucket, Key=key)

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every object whose key starts with ``prefix``; return how many.

        An empty prefix is refused: it would empty the bucket.
        """
        check_key(prefix, what="prefix")
        deleted = 0
        batch: builtins.list[str] = []
        async for info in self.iter_objects(prefix):
            batch.append(info.key)
            if len(batch) == _DELETE_BATCH:
                deleted += await self._delete_batch(batch)
                batch = []
        if batch:
            deleted += await self._delete_batch(batch)
        return deleted

    async def _delete_batch(self, keys: builtins.list[str]) -> int:
        with translated():
            response = await self.client.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True},
            )
        errors = response.get("Errors") or []
        if errors:
            raise BlobError(f"{len(errors)} of {len(keys)} deletions failed: {errors[:3]!r}")
        return len(keys)

    # -- reading --------------------------------------------------------------

    async def _get_object(self, key: str) -> Any:
        check_key(key)
        with translated(key):
            return await self.client.get_object(Bucket=self.bucket, Key=key)

    async def get_bytes(self, key: str) -> bytes:
        """Return the whole object (for small blobs: configs, metadata)."""
        response = await self._get_object(key)
        with translated(key):
            async with response["Body"] as body:
                return bytes(await body.read())

    async def get_stream(
        self, key: str, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> AsyncGenerator[bytes, None]:
        """Yield the object in chunks of at most ``chunk_size`` bytes.

        An async generator: `BlobNotFound` surfaces at the first iteration. Close it
        (``contextlib.aclosing``) when stopping early so the connection is released.
        """
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        response = await self._get_object(key)
        with translated(key):
            async with response["Body"] as body:
                while chunk := await body.read(chunk_size):
                    yield bytes(chunk)

    async def get_sha256(self, key: str) -> str:
        """Return the hex SHA-256 of the object, streaming it (nothing kept)."""
        async with aclosing(self.get_stream(key)) as chunks:
            return (await digest_stream(chunks)).sha256

    async def download_to(self, key: str, path: str | os.PathLike[str]) -> BlobDigest:
        """Stream the object into ``path``; return its size and SHA-256.

        Written to a temporary sibling first and renamed, so ``path`` never holds a
        partial download.
        """
        async with aclosing(self.get_stream(key)) as chunks:
            return await write_stream(chunks, path)

    async def exists(self, key: str) -> bool:
        """Whether ``key`` exists (a ``HeadObject``)."""
        check_key(key)
        try:
            with translated(key):
                await self.client.head_object(Bucket=self.bucket, Key=key)
        except BlobNotFound:
            return False
        return True

    async def iter_objects(self, prefix: str = "") -> AsyncGenerator[BlobInfo, None]:
        """Yield every object under ``prefix``, in key order, page by page."""
        paginator = self.client.get_paginator("list_objects_v2")
        # aiobotocore's page iterator is an async *iterable*; its __anext__ is an
        # async generator function, so take the iterator with aiter() first.
        pages = aiter(
            paginator.paginate(
                Bucket=self.bucket,
                Prefix=prefix,
                PaginationConfig={"PageSize": self._list_page_size},
            )
        )
        while True:
            with translated():
                page = await anext(pages, None)
            if page is None:
                return
            for item in page.get("Contents", []):
                yield BlobInfo(
                    key=str(item["Key"]),
                    size=int(item["Size"]),
                    etag=str(item.get("ETag", "")).strip('"'),
                    last_modified=item["LastModified"].astimezone(UTC),
                )

    async def list(self, prefix: str = "") -> builtins.list[BlobInfo]:
        """Return every object under ``prefix`` (see `iter_objects` for large sets)."""
        return [info async for info in self.iter_objects(prefix)]

    # -- presigning -----------------------------------------------------------

    async def presigned_get(self, key: str, *, expires_s: int = DEFAULT_PRESIGN_EXPIRES_S) -> str:
        """Return a presigned ``GET`` URL for ``key`` (no network call is made)."""
        check_key(key)
        return await presign_get(self._presign_client, self.bucket, key, expires_s=expires_s)

    async def presigned_post(
        self,
        key: str,
        *,
        max_bytes: int,
        expires_s: int = DEFAULT_PRESIGN_EXPIRES_S,
        min_bytes: int = 0,
        content_type: str | None = None,
    ) -> PresignedPost:
        """Return a presigned POST form ``{"url", "fields"}`` for uploads by peers.

        The policy pins the exact key and a ``content-length-range`` of
        ``min_bytes..max_bytes``; the store refuses a body outside it
        (MinIO: ``400 EntityTooLarge``).
        """
        check_key(key)
        return await presign_post(
            self._presign_client,
            self.bucket,
            key,
            max_bytes=max_bytes,
            min_bytes=min_bytes,
            expires_s=expires_s,
            content_type=content_type,
        )
