"""Receiving starting weights: the body read up to its cap, checked, stored as
safetensors, and ``weights.uploaded`` appended with its tensor table."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import structlog

from peertrain.aggregator.domain.errors import WeightsTooLarge
from peertrain.common.events import NewEvent
from peertrain.common.events.weights import (
    TensorInfo,
    WeightsUploaded,
    weights_key,
    weights_stream,
)
from peertrain.common.ids import new_id
from peertrain.ml.weights import WeightsInvalid, dtype_code, read_starting_weights, state_to_bytes

from .storage import sha256_hex

if TYPE_CHECKING:
    from ..application import AggregatorApp

__all__ = ["receive_weights"]

log = structlog.get_logger(__name__)


async def _read_capped(body: AsyncIterator[bytes], cap: int) -> bytes:
    data = bytearray()
    async for chunk in body:
        data += chunk
        if len(data) > cap:
            raise WeightsTooLarge(cap)
    return bytes(data)


async def receive_weights(
    app: AggregatorApp,
    body: AsyncIterator[bytes],
    *,
    owner_id: str,
    name: str,
    content_length: int | None,
) -> WeightsUploaded:
    """Read, check and store uploaded starting weights; the event appended.

    Raises
    ------
    WeightsTooLarge
        413, as soon as the body passes ``max_weights_bytes`` (or announces more).
    WeightsInvalid
        422: not safetensors nor a ``.pt`` state dict, or tensors unfit to start from.
    """
    cap = app.settings.max_weights_bytes
    if content_length is not None and content_length > cap:
        raise WeightsTooLarge(cap)
    data = await _read_capped(body, cap)
    if not data:
        raise WeightsInvalid("the body is empty: send the weights file as the request body")
    state = await asyncio.to_thread(read_starting_weights, data)
    stored = await asyncio.to_thread(state_to_bytes, state)
    weights_id = new_id()
    key = weights_key(weights_id)
    await app.blobs.put_bytes(key, stored, content_type="application/octet-stream")
    uploaded = WeightsUploaded(
        weights_id=weights_id,
        owner_id=owner_id,
        name=name or weights_id,
        key=key,
        sha256=sha256_hex(stored),
        size=len(stored),
        tensors=tuple(
            TensorInfo(name=k, dtype=dtype_code(v), shape=tuple(v.shape)) for k, v in state.items()
        ),
    )
    event = NewEvent.of(
        uploaded, producer=app.settings.service_name, actor=owner_id, correlation_id=weights_id
    )
    try:
        await app.log.append(weights_stream(weights_id), [event], expected_version=0)
    except BaseException:
        await asyncio.shield(app.blobs.delete(key))
        raise
    log.info("starting weights stored", weights_id=weights_id, tensors=len(state), size=len(stored))
    return uploaded
