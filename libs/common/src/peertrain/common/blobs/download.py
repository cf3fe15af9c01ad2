"""Sinks for streamed object bodies: hash them, or write them to a file."""

from __future__ import annotations

import asyncio
import hashlib
import os
import uuid
from collections.abc import AsyncIterable
from pathlib import Path

from peertrain.common.blobs.models import BlobDigest

__all__ = ["digest_stream", "write_stream"]


async def digest_stream(chunks: AsyncIterable[bytes]) -> BlobDigest:
    """Consume ``chunks``; return their total size and SHA-256 (nothing is kept)."""
    digest = hashlib.sha256()
    size = 0
    async for chunk in chunks:
        digest.update(chunk)
        size += len(chunk)
    return BlobDigest(size=size, sha256=digest.hexdigest())


async def write_stream(chunks: AsyncIterable[bytes], path: str | os.PathLike[str]) -> BlobDigest:
    """Write ``chunks`` to ``path``; return their size and SHA-256.

    The bytes go to a temporary sibling first, renamed over ``path`` at the end, so
    ``path`` never holds a partial body; on any error the temporary file is removed.
    File I/O runs in a worker thread, off the event loop.
    """
    target = Path(path)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.part")
    digest = hashlib.sha256()
    size = 0
    try:
        file = await asyncio.to_thread(partial.open, "wb")
        try:
            async for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                await asyncio.to_thread(file.write, chunk)
        finally:
            await asyncio.to_thread(file.close)
        await asyncio.to_thread(os.replace, partial, target)
    except BaseException:
        await asyncio.to_thread(partial.unlink, missing_ok=True)
        raise
    return BlobDigest(size=size, sha256=digest.hexdigest())
