"""Reading and writing the bucket for the aggregator: capped downloads, model versions."""

from __future__ import annotations

import asyncio
import hashlib
from contextlib import aclosing
from typing import TYPE_CHECKING

import torch

from peertrain.aggregator.domain import JobMemory, UpdateRefused, codes
from peertrain.common.blobs import BlobNotFound
from peertrain.common.events.models import model_key

from .numerics import State, decode_update, load_state

if TYPE_CHECKING:
    from ..application import AggregatorApp

__all__ = [
    "accepted_delta",
    "fetch_capped",
    "model_state",
    "read_version",
    "server_state",
    "sha256_hex",
]


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256."""
    return hashlib.sha256(data).hexdigest()


async def fetch_capped(app: AggregatorApp, key: str, cap: int) -> bytes:
    """The object at ``key``, refused as soon as it passes ``cap`` bytes.

    Raises
    ------
    UpdateRefused
        ``missing_object`` or ``too_large``.
    """
    parts: list[bytes] = []
    size = 0
    try:
        async with aclosing(app.blobs.get_stream(key)) as chunks:
            async for chunk in chunks:
                size += len(chunk)
                if size > cap:
                    raise UpdateRefused(codes.TOO_LARGE, f"the object is over {cap} bytes")
                parts.append(chunk)
    except BlobNotFound:
        raise UpdateRefused(codes.MISSING_OBJECT, f"no object at {key}") from None
    return b"".join(parts)


async def accepted_delta(
    app: AggregatorApp,
    state: JobMemory,
    key: str,
    sha256: str,
    base: dict[str, torch.Tensor],
) -> State:
    """An accepted update's dense delta, read back from the aggregator's own copy at
    ``key``: capped, checked against the ``sha256`` it was accepted with, and decoded
    with the job's bound and compression (a round's rebuild, the holder's fold of an
    update another instance accepted, a check's comparison).

    Raises
    ------
    UpdateRefused
        The copy is gone, too large, changed, or does not decode.
    """
    assert state.configured is not None
    cfg = state.configured
    data = await fetch_capped(app, key, app.settings.max_update_bytes)
    if sha256_hex(data) != sha256:
        raise UpdateRefused(codes.SHA256_MISMATCH, "it changed after it was accepted")
    return await asyncio.to_thread(
        decode_update, data, base, cfg.aggregation.update_bound, cfg.training.compression
    )


async def model_state(
    app: AggregatorApp, state: JobMemory, version: int
) -> dict[str, torch.Tensor]:
    """Model version ``version`` of the job (cached: the latest one loaded)."""
    cached = app.bases.get(state.job_id)
    if cached is not None and cached[0] == version:
        return cached[1]
    tensors = await read_version(app, state, version)
    app.bases[state.job_id] = (version, tensors)
    return tensors


async def read_version(
    app: AggregatorApp, state: JobMemory, version: int
) -> dict[str, torch.Tensor]:
    """Model version ``version`` of the job, checked against its recorded sha256 (read
    afresh: nothing cached, so readers leave the training's base alone)."""
    info = state.versions.get(version)
    key = info.created.key if info else model_key(state.job_id, version)
    data = await app.blobs.get_bytes(key)
    if info is not None and sha256_hex(data) != info.created.sha256:
        raise RuntimeError(f"{key} does not have the sha256 recorded for version {version}")
    return await asyncio.to_thread(load_state, data)


async def server_state(app: AggregatorApp, state: JobMemory, version: int) -> bytes | None:
    """The strategy's server state stored with ``version`` (``None`` for stateless)."""
    info = state.versions.get(version)
    if info is None or info.created.server_state_key is None:
        return None
    return await app.blobs.get_bytes(info.created.server_state_key)
