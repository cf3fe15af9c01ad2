"""Reading and writing the bucket for the aggregator: capped downloads, model versions."""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
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
    "DeltaCache",
    "accepted_delta",
    "fetch_capped",
    "model_state",
    "read_version",
    "server_state",
    "sha256_hex",
]


class DeltaCache:
    """Accepted updates' decoded deltas, by object and sha256, the most recently used
    kept within ``max_bytes`` (0 keeps none).

    A round whose running sum is not exactly what it includes (an asynchronous buffer
    that closed on fewer updates than were folded, or on updates accepted while the
    version before it was being made; clipping at close) is made again from its
    updates: from here, where it used to read, check and decode each one from the
    bucket again, on the path from the last update to the next round. A delta is what
    :func:`accepted_delta` decodes from the accepted bytes (the same tensors, so the
    same bits); callers never change it in place.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[tuple[str, str], tuple[str, State, int]] = OrderedDict()

    def get(self, key: str, sha256: str) -> State | None:
        """The delta accepted as ``key`` with ``sha256``, if it is kept."""
        entry = self._entries.get((key, sha256))
        if entry is None:
            return None
        self._entries.move_to_end((key, sha256))
        return entry[1]

    def put(self, job_id: str, key: str, sha256: str, delta: State) -> None:
        """Keep ``delta``; the least recently used go while over the budget (one larger
        than the whole budget is not kept)."""
        size = sum(t.numel() * t.element_size() for t in delta.values())
        if size > self.max_bytes or (key, sha256) in self._entries:
            return
        self._entries[(key, sha256)] = (job_id, delta, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, (_, _, dropped) = self._entries.popitem(last=False)
            self.bytes -= dropped

    def forget(self, job_id: str) -> None:
        """Drop a job's deltas."""
        for k in [k for k, (job, _, _) in self._entries.items() if job == job_id]:
            self.bytes -= self._entries.pop(k)[2]

    def __len__(self) -> int:
        return len(self._entries)


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
    """An accepted update's dense delta: kept in memory (:class:`DeltaCache`), else read
    back from the aggregator's own copy at ``key``, capped, checked against the
    ``sha256`` it was accepted with, and decoded with the job's bound and compression (a
    round's rebuild, the holder's fold of an update another instance accepted, a check's
    comparison).

    Raises
    ------
    UpdateRefused
        The copy is gone, too large, changed, or does not decode.
    """
    assert state.configured is not None
    cfg = state.configured
    kept = app.deltas.get(key, sha256)
    if kept is not None:
        return kept
    data = await fetch_capped(app, key, app.settings.max_update_bytes)
    if sha256_hex(data) != sha256:
        raise UpdateRefused(codes.SHA256_MISMATCH, "it changed after it was accepted")
    delta = await asyncio.to_thread(
        decode_update, data, base, cfg.aggregation.update_bound, cfg.training.compression
    )
    app.deltas.put(state.job_id, key, sha256, delta)
    return delta


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
