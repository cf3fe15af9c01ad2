"""Moving files between the scratch folder and the bucket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from peertrain.common.blobs import BlobPort
from peertrain.common.events.datasets import ArtifactRef

__all__ = ["copy_object", "upload_file"]

_CHUNK = 2 * 1024 * 1024


async def _chunks(path: Path) -> AsyncIterator[bytes]:
    file = await asyncio.to_thread(path.open, "rb")
    try:
        while chunk := await asyncio.to_thread(file.read, _CHUNK):
            yield chunk
    finally:
        await asyncio.to_thread(file.close)


async def upload_file(
    blobs: BlobPort,
    key: str,
    path: Path,
    *,
    rows: int | None = None,
    class_counts: tuple[int, ...] | None = None,
    content_type: str = "application/octet-stream",
) -> ArtifactRef:
    """Stream a local file to ``key``; its reference carries the SHA-256 computed on the way."""
    result = await blobs.put_stream(key, _chunks(path), content_type=content_type)
    return ArtifactRef(
        key=key, sha256=result.sha256, size=result.size, rows=rows, class_counts=class_counts
    )


async def copy_object(blobs: BlobPort, source: ArtifactRef, key: str) -> ArtifactRef:
    """A server-side copy of ``source`` at ``key`` (same bytes, same SHA-256)."""
    await blobs.copy(source.key, key)
    return source.model_copy(update={"key": key})
