"""State dicts as safetensors bytes, and a header check that runs before any decoding.

Weights travel only as safetensors: a JSON header and raw little-endian tensor data,
nothing executable. :func:`read_header` checks the framing by hand (length prefix, JSON
header, known dtypes, offsets that tile the data exactly), so anything else — a pickle
or a ``torch.save`` zip posing as an update — is refused with :class:`NotSafetensors`
before any library parses it, and nothing in it is ever executed.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load as _st_load
from safetensors.torch import save as _st_save

from ..errors import NotSafetensors
from ..problems import ProblemCode, UpdateProblem

__all__ = [
    "DTYPES",
    "MAX_HEADER_BYTES",
    "SafetensorsHeader",
    "TensorInfo",
    "load_state_file",
    "read_header",
    "save_state_file",
    "state_from_bytes",
    "state_to_bytes",
]

MAX_HEADER_BYTES = 16 * 1024 * 1024
"""Largest JSON header accepted (safetensors' own limit is 100 MB)."""

DTYPES: dict[str, torch.dtype] = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
"""The safetensors dtype names accepted, and their torch dtypes."""


@dataclass(frozen=True)
class TensorInfo:
    """One tensor's entry in a safetensors header; offsets count from the data start."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True)
class SafetensorsHeader:
    """A checked safetensors header.

    Attributes
    ----------
    tensors
        Name to :class:`TensorInfo`.
    metadata
        The ``__metadata__`` string map (empty when absent).
    data_start
        Offset of the tensor data in the file: ``8 + header length``.
    """

    tensors: dict[str, TensorInfo]
    metadata: dict[str, str]
    data_start: int


def _refuse(why: str) -> NotSafetensors:
    problem = UpdateProblem(ProblemCode.NOT_SAFETENSORS, f"not safetensors: {why}")
    return NotSafetensors(f"not a safetensors file: {why}", issues=[problem])


def _tensor_info(name: str, entry: object) -> TensorInfo:
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise _refuse(f"entry {name!r} is malformed")
    dtype = DTYPES.get(entry["dtype"]) if isinstance(entry["dtype"], str) else None
    shape, offsets = entry["shape"], entry["data_offsets"]
    if dtype is None:
        raise _refuse(f"entry {name!r} has an unsupported dtype")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise _refuse(f"entry {name!r} has a malformed shape")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and o >= 0 for o in offsets)
    ):
        raise _refuse(f"entry {name!r} has malformed data_offsets")
    begin, end = offsets
    itemsize = torch.empty((), dtype=dtype).element_size()
    if end - begin != math.prod(shape) * itemsize:
        raise _refuse(f"entry {name!r}: offsets do not match shape and dtype")
    return TensorInfo(dtype=dtype, shape=tuple(shape), begin=begin, end=end)


def read_header(prefix: bytes | memoryview, total_size: int) -> SafetensorsHeader:
    """Check the framing of a safetensors file from its first bytes.

    Parameters
    ----------
    prefix
        At least the first ``8 + header length`` bytes (the whole file will do).
    total_size
        The file's full size in bytes.

    Raises
    ------
    NotSafetensors
        For anything that is not a well-formed safetensors file.
    """
    view = memoryview(prefix)
    if total_size < 8 or len(view) < 8:
        raise _refuse("shorter than the 8-byte header length")
    (length,) = struct.unpack("<Q", view[:8])
    if length < 2 or length > MAX_HEADER_BYTES or 8 + length > total_size:
        raise _refuse("implausible header length")
    if len(view) < 8 + length:
        raise _refuse("header is truncated")
    raw = bytes(view[8 : 8 + length])
    if raw[:1] != b"{":
        raise _refuse("header is not a JSON object")
    try:
        parsed = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _refuse("header is not valid JSON") from None
    if not isinstance(parsed, dict):
        raise _refuse("header is not a JSON object")
    metadata = parsed.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise _refuse("__metadata__ is not a string map")
    tensors = {name: _tensor_info(name, entry) for name, entry in parsed.items()}
    cursor = 0
    for info in sorted(tensors.values(), key=lambda t: (t.begin, t.end)):
        if info.begin != cursor:
            raise _refuse("tensor data overlaps or leaves gaps")
        cursor = info.end
    if 8 + length + cursor != total_size:
        raise _refuse("tensor data does not fill the file exactly")
    return SafetensorsHeader(tensors=tensors, metadata=dict(metadata), data_start=8 + length)


def state_to_bytes(
    state: Mapping[str, torch.Tensor], metadata: Mapping[str, str] | None = None
) -> bytes:
    """Serialise tensors (moved to the CPU, made contiguous) as safetensors bytes."""
    tensors = {name: t.detach().to("cpu").contiguous() for name, t in state.items()}
    return bytes(_st_save(tensors, metadata=dict(metadata) if metadata else None))


def state_from_bytes(data: bytes) -> dict[str, torch.Tensor]:
    """Decode safetensors bytes into CPU tensors, after :func:`read_header` checked them.

    Raises
    ------
    NotSafetensors
        For anything else (a pickle, a zip, truncated or padded data).
    """
    header = read_header(data, len(data))
    try:
        tensors = _st_load(data)
    except Exception as exc:  # safetensors' own checks; nothing was executed
        raise _refuse(str(exc).splitlines()[0][:200]) from None
    if set(tensors) != set(header.tensors):
        raise _refuse("decoded tensors differ from the header")
    return dict(tensors)


def save_state_file(
    state: Mapping[str, torch.Tensor],
    path: str | Path,
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write ``state`` to ``path`` as safetensors."""
    Path(path).write_bytes(state_to_bytes(state, metadata))


def load_state_file(path: str | Path) -> dict[str, torch.Tensor]:
    """Read a safetensors file written by anyone, refusing anything else (see above)."""
    return state_from_bytes(Path(path).read_bytes())
