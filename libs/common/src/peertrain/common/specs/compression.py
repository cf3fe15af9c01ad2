"""How a job's updates travel (``training.compression``): the one definition.

Peers encode their update (a float32 delta) as this block says, and the aggregator
decodes it before any check; :mod:`peertrain.ml.weights.compression` does both. The
kinds, and what each costs per value of a floating tensor:

``none``
    float32 (4 bytes).
``fp16``
    float16 (2 bytes).
``int8``
    int8 and one float32 scale per ``block`` values (``block: 0``: one per tensor):
    a little over 1 byte.
``topk``
    the ``ceil(ratio * n)`` largest values of each tensor by magnitude, as an int32
    index and a float16 value (6 bytes each); what is left out is kept by the peer and
    added to its next update of the job (error feedback).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CompressionKind", "CompressionSpec"]

CompressionKind = Literal["none", "fp16", "int8", "topk"]


class CompressionSpec(BaseModel):
    """The ``training.compression`` block.

    Attributes
    ----------
    kind
        ``none`` (default), ``fp16``, ``int8`` or ``topk``.
    block
        ``int8``: values per scale; 0: one scale per tensor.
    ratio
        ``topk``: the share of each tensor's values sent (``0 < ratio <= 1``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: CompressionKind = "none"
    block: int = Field(default=256, ge=0, le=1 << 20)
    ratio: float = Field(default=0.01, gt=0, le=1)

    def kept(self, numel: int) -> int:
        """How many values of a tensor of ``numel`` top-k sends."""
        return min(numel, max(1, math.ceil(self.ratio * numel))) if numel else 0
