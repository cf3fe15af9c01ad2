"""Streaming upload: a bounded buffer, S3 multipart parts, SHA-256 on the way."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterable
from typing import Any

from peertrain.common.blobs.errors import BlobError, BlobTooLarge
from peertrain.common.blobs.models import PutResult

__all__ = ["MAX_PARTS", "stream_upload"]

log = logging.getLogger(__name__)

MAX_PARTS = 10_000
"""S3's limit on the number of parts in one multipart upload."""


class _MultipartUpload:
    """One open multipart upload; parts are sent in order, one at a time."""

    def __init__(self, client: Any, bucket: str, key: str, upload_id: str) -> None:
        self._client = client
        self._bucket = bucket
        self._key = key
        self._upload_id = upload_id
        self._parts: list[dict[str, Any]] = []

    @classmethod
    async def create(
        cls, client: Any, bucket: str, key: str, content_type: str | None
    ) -> _MultipartUpload:
        extra = {"ContentType": content_type} if content_type else {}
        response = await client.create_multipart_upload(Bucket=bucket, Key=key, **extra)
        return cls(client, bucket, key, str(response["UploadId"]))

    async def send(self, part: bytes) -> None:
        number = len(self._parts) + 1
        if number > MAX_PARTS:
            raise BlobError(f"blob {self._key!r} needs more than {MAX_PARTS} parts")
        response = await self._client.upload_part(
            Bucket=self._bucket,
            Key=self._key,
            UploadId=self._upload_id,
            PartNumber=number,
            Body=part,
        )
        self._parts.append({"ETag": response["ETag"], "PartNumber": number})

    async def complete(self) -> None:
        await self._client.complete_multipart_upload(
            Bucket=self._bucket,
            Key=self._key,
            UploadId=self._upload_id,
            MultipartUpload={"Parts": self._parts},
        )

    async def abort(self) -> None:
        """Abort, logging (not raising) a failure so the original error wins."""
        try:
            await self._client.abort_multipart_upload(
                Bucket=self._bucket, Key=self._key, UploadId=self._upload_id
            )
        except Exception:
            log.exception(
                "blobs.multipart_abort_failed", extra={"key": self._key, "upload": self._upload_id}
            )


async def stream_upload(
    client: Any,
    bucket: str,
    key: str,
    chunks: AsyncIterable[bytes],
    *,
    part_size: int,
    content_type: str | None = None,
    max_bytes: int | None = None,
) -> PutResult:
    """Upload an async stream of chunks, holding at most about one part in memory.

    A body no larger than one part goes up as a single ``PutObject``; a larger one as
    a multipart upload whose parts are ``part_size`` bytes except the last. On any
    error (including ``max_bytes`` being passed, and cancellation) the multipart upload
    is aborted, so neither an object nor pending parts are left behind, and the rest
    of ``chunks`` is not read.

    Parameters
    ----------
    client
        An open aiobotocore S3 client.
    bucket, key
        Where to store the object.
    chunks
        The body, in chunks of any size.
    part_size
        Multipart part size (at least S3's 5 MiB minimum).
    content_type
        ``Content-Type`` stored with the object.
    max_bytes
        Upper bound on the body; passing it raises `BlobTooLarge`.

    Returns
    -------
    PutResult
        Key, size and SHA-256 of what was stored.
    """
    digest = hashlib.sha256()
    size = 0
    buffer = bytearray()
    upload: _MultipartUpload | None = None
    try:
        async for chunk in chunks:
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                raise BlobTooLarge(key, max_bytes)
            digest.update(chunk)
            buffer += chunk
            # Strictly greater: a body of exactly one part stays a single PutObject,
            # and the last multipart part is never empty.
            while len(buffer) > part_size:
                if upload is None:
                    upload = await _MultipartUpload.create(client, bucket, key, content_type)
                with memoryview(buffer) as view:  # one copy, not two as with a slice
                    part = bytes(view[:part_size])
                del buffer[:part_size]
                await upload.send(part)
                del part
        if upload is None:
            extra = {"ContentType": content_type} if content_type else {}
            await client.put_object(Bucket=bucket, Key=key, Body=bytes(buffer), **extra)
        else:
            await upload.send(bytes(buffer))
            buffer.clear()
            await upload.complete()
    except BaseException:
        if upload is not None:
            # Shielded: a second cancellation must not leave the parts behind.
            await asyncio.shield(upload.abort())
        raise
    return PutResult(key=key, size=size, sha256=digest.hexdigest())
