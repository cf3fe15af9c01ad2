"""Model files as users download them: the final model, or any version as ``.pt`` or
``.safetensors`` with the same specs and preprocessing as the final one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from peertrain.aggregator.domain import JobMemory, Which, download_name, pick_version

from .numerics import export_file
from .storage import read_version, sha256_hex

if TYPE_CHECKING:
    from ..application import AggregatorApp

__all__ = ["CHUNK", "Format", "ModelFile", "blob_chunks", "version_file"]

Format = Literal["pt", "safetensors"]
CHUNK = 1 << 20
"""Bytes per chunk of a file built in memory."""


@dataclass(frozen=True)
class ModelFile:
    """A model file ready to be streamed: its bytes come from ``chunks``."""

    version: int
    filename: str
    sha256: str
    size: int | None
    """Bytes, when known before streaming."""
    chunks: AsyncIterator[bytes]


async def blob_chunks(app: AggregatorApp, key: str) -> AsyncIterator[bytes]:
    """The object at ``key`` as chunks; a missing object (``BlobNotFound``) raises here,
    before an answer's headers are sent."""
    chunks = app.blobs.get_stream(key)
    first = await anext(chunks, b"")

    async def body() -> AsyncIterator[bytes]:
        async with aclosing(chunks):
            if first:
                yield first
            async for chunk in chunks:
                yield chunk

    return body()


async def _memory_chunks(data: bytes) -> AsyncIterator[bytes]:
    view = memoryview(data)
    for start in range(0, len(view), CHUNK):
        yield bytes(view[start : start + CHUNK])


async def version_file(
    app: AggregatorApp, state: JobMemory, which: Which, fmt: Format
) -> ModelFile:
    """Model version ``which`` (a number, or ``"best"``) of the job as a ``fmt`` file.

    The final model's version is streamed from the exported file itself (the same bytes
    as ``/final``); any other is built from the stored version on demand, in memory
    (O(model), as the export is).

    Raises
    ------
    VersionNotFound, NoEvaluatedVersion
        See :func:`peertrain.aggregator.domain.pick_version`.
    """
    version = pick_version(state.versions, which)
    filename = download_name(state.name, state.job_id, version, fmt)
    exported = state.exported
    if exported is not None and exported.version == version:
        key, sha = (
            (exported.pt_key, exported.pt_sha256)
            if fmt == "pt"
            else (exported.safetensors_key, exported.safetensors_sha256)
        )
        return ModelFile(version, filename, sha, None, await blob_chunks(app, key))
    configured = state.configured
    assert configured is not None, "a job has versions only once it is configured"
    tensors = await read_version(app, state, version)
    data = await asyncio.to_thread(export_file, configured, tensors, fmt)
    return ModelFile(version, filename, sha256_hex(data), len(data), _memory_chunks(data))
