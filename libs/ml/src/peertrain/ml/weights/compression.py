"""Compressed model updates: fp16, int8 with scales, top-k with error feedback.

The job says how (``training.compression``, :class:`peertrain.common.specs.CompressionSpec`).

A peer's update (a delta, float32) is encoded into a state dict of small tensors that
travels as safetensors like any other; the aggregator decodes it back to a dense
float32 delta before any check, so every check and every strategy sees what it saw
before. Encoding and decoding are pure and deterministic (the same bits on every
machine), so the simulation and the platform agree bit for bit.

Per tensor ``w`` of the reference (the model's state), only floating tensors are
compressed; the others (e.g. BatchNorm's ``num_batches_tracked``) travel as they are:

``fp16``
    ``w`` as float16.
``int8``
    ``w`` as int8, and ``w.__scale__`` (float32): one scale per block of ``block``
    values of the flattened tensor (``block=0``: one per tensor); a value is
    ``round(x / scale)`` with ``scale = max|x| / 127`` over its block.
``topk``
    ``w.__idx__`` (int32, ascending, no repeats) and ``w.__val__`` (float16): the
    ``ceil(ratio * numel)`` largest values by magnitude; the rest are zero. What is left
    out is kept by the peer (the residual of :func:`compress_update`) and added to its
    next update, so nothing is lost, only delayed.

Decoding trusts nothing: a missing or extra name, a wrong dtype or shape, an index out
of range or repeated, more values than the ratio allows, or a scale that is not finite
and positive is refused with :class:`CompressionInvalid`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from peertrain.common.specs import CompressionSpec
from peertrain.ml.errors import MLError, UpdateInvalid

from .codec import state_from_bytes
from .validate import load_update, update_problems

__all__ = [
    "CompressionInvalid",
    "Encoded",
    "compress_update",
    "decode_update",
    "encode_update",
    "encoded_bytes",
    "load_encoded_update",
    "max_encoded_bytes",
]

_SCALE, _IDX, _VAL = ".__scale__", ".__idx__", ".__val__"


class CompressionInvalid(MLError, ValueError):
    """An encoded update that does not decode against the model."""


def _compressed(tensor: torch.Tensor) -> bool:
    return tensor.is_floating_point()


def _blocks(numel: int, block: int) -> int:
    return 1 if block == 0 or numel == 0 else -(-numel // block)


def _int8(flat: torch.Tensor, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = flat.numel()
    size = n if block == 0 else block
    nblocks = _blocks(n, block)
    padded = torch.zeros(nblocks * max(size, 1), dtype=torch.float32)
    padded[:n] = flat
    rows = padded.view(nblocks, -1)
    peak = rows.abs().amax(dim=1)
    scale = torch.where(peak > 0, peak / 127.0, torch.ones_like(peak))
    q = torch.round(rows / scale[:, None]).clamp_(-127, 127).to(torch.int8)
    return q.reshape(-1)[:n], scale.to(torch.float32)


def encode_update(
    delta: Mapping[str, torch.Tensor], spec: CompressionSpec
) -> dict[str, torch.Tensor]:
    """``delta`` (float tensors by name) encoded as ``spec`` says (see the module)."""
    if spec.kind == "none":
        return dict(delta)
    out: dict[str, torch.Tensor] = {}
    for name, tensor in delta.items():
        if not _compressed(tensor):
            out[name] = tensor
            continue
        flat = tensor.detach().reshape(-1).to(torch.float32)
        if spec.kind == "fp16":
            out[name] = flat.to(torch.float16).reshape(tensor.shape)
        elif spec.kind == "int8":
            q, scale = _int8(flat, spec.block)
            out[name] = q.reshape(tensor.shape)
            out[name + _SCALE] = scale
        else:
            k = spec.kept(flat.numel())
            # stable: ties go to the lower index, on every machine
            order = torch.argsort(flat.abs(), descending=True, stable=True)[:k]
            idx = torch.sort(order).values
            out[name + _IDX] = idx.to(torch.int32)
            out[name + _VAL] = flat[idx].to(torch.float16)
    return out


def _refuse(why: str) -> CompressionInvalid:
    return CompressionInvalid(f"compressed update refused: {why}")


def _expect(encoded: Mapping[str, torch.Tensor], name: str, dtype: torch.dtype) -> torch.Tensor:
    found = encoded.get(name)
    if found is None:
        raise _refuse(f"{name} is missing")
    if found.dtype != dtype:
        raise _refuse(f"{name} is {found.dtype}, not {dtype}")
    return found


def decode_update(
    encoded: Mapping[str, torch.Tensor],
    reference: Mapping[str, torch.Tensor],
    spec: CompressionSpec,
) -> dict[str, torch.Tensor]:
    """The dense float32 delta an encoded update stands for, shaped as ``reference``.

    Raises
    ------
    CompressionInvalid
        The update does not decode against the model (see the module).
    """
    if spec.kind == "none":
        return dict(encoded)
    out: dict[str, torch.Tensor] = {}
    used: set[str] = set()
    for name, ref in reference.items():
        if not _compressed(ref):
            out[name] = _expect(encoded, name, ref.dtype)
            used.add(name)
            continue
        numel = ref.numel()
        if spec.kind == "fp16":
            value = _expect(encoded, name, torch.float16)
            if tuple(value.shape) != tuple(ref.shape):
                raise _refuse(f"{name} has shape {tuple(value.shape)}")
            dense = value.to(torch.float32)
            used.add(name)
        elif spec.kind == "int8":
            q = _expect(encoded, name, torch.int8)
            scale = _expect(encoded, name + _SCALE, torch.float32)
            if tuple(q.shape) != tuple(ref.shape):
                raise _refuse(f"{name} has shape {tuple(q.shape)}")
            nblocks = _blocks(numel, spec.block)
            if tuple(scale.shape) != (nblocks,):
                raise _refuse(f"{name} needs {nblocks} scale(s)")
            if not bool(torch.isfinite(scale).all()) or bool((scale <= 0).any()):
                raise _refuse(f"{name} has a scale that is not finite and positive")
            per = numel if spec.block == 0 else spec.block
            scales = scale.repeat_interleave(max(per, 1))[:numel]
            dense = q.reshape(-1).to(torch.float32) * scales
            used.update((name, name + _SCALE))
        else:
            idx = _expect(encoded, name + _IDX, torch.int32)
            val = _expect(encoded, name + _VAL, torch.float16)
            if idx.dim() != 1 or val.dim() != 1 or idx.numel() != val.numel():
                raise _refuse(f"{name} has indices and values that do not pair up")
            if idx.numel() > spec.kept(numel):
                raise _refuse(f"{name} sends {idx.numel()} values, more than {spec.kept(numel)}")
            longs = idx.to(torch.int64)
            if idx.numel() and (
                int(longs.min()) < 0
                or int(longs.max()) >= numel
                or bool((longs[1:] <= longs[:-1]).any())
            ):
                raise _refuse(f"{name} has indices out of range, repeated or not ascending")
            dense = torch.zeros(numel, dtype=torch.float32)
            dense[longs] = val.to(torch.float32)
            used.update((name + _IDX, name + _VAL))
        if not bool(torch.isfinite(dense).all()):
            raise _refuse(f"{name} holds values that are not finite")
        out[name] = dense.reshape(ref.shape)
    extra = sorted(set(encoded) - used)
    if extra:
        raise _refuse(f"unexpected tensors: {', '.join(extra[:5])}")
    return out


def encoded_bytes(encoded: Mapping[str, torch.Tensor]) -> int:
    """The tensors' payload in bytes (what the compression saves is measured on this)."""
    return sum(t.numel() * t.element_size() for t in encoded.values())


def max_encoded_bytes(reference: Mapping[str, torch.Tensor], spec: CompressionSpec) -> int:
    """The most tensor bytes an update of ``reference`` encoded as ``spec`` may carry
    (the aggregator's cap on an announced update is this plus the header's slack)."""
    total = 0
    for ref in reference.values():
        n = ref.numel()
        if not _compressed(ref) or spec.kind == "none":
            total += n * ref.element_size()
        elif spec.kind == "fp16":
            total += 2 * n
        elif spec.kind == "int8":
            total += n + 4 * _blocks(n, spec.block)
        else:
            total += 6 * spec.kept(n)
    return total


@dataclass(frozen=True)
class Encoded:
    """An update ready to travel, and what the peer keeps for its next one.

    Attributes
    ----------
    tensors
        The encoded state dict (uploaded as safetensors).
    residual
        ``topk`` (error feedback): what the encoding left out of ``delta + residual``,
        float tensors by name, to be added to the peer's next update of the job and
        shard; ``None`` for the other kinds, which keep nothing.
    """

    tensors: dict[str, torch.Tensor]
    residual: dict[str, torch.Tensor] | None = None


def compress_update(
    delta: Mapping[str, torch.Tensor],
    spec: CompressionSpec,
    residual: Mapping[str, torch.Tensor] | None = None,
) -> Encoded:
    """``delta`` encoded as ``spec`` says: the one encode step of peers and the simulation.

    For ``topk`` the update sent is ``delta + residual`` (``residual``: what the peer's
    earlier updates of this job and shard left out; ``None`` at first, or after a
    restart), and the new residual is what this encoding leaves out, so nothing is
    lost, only delayed (error feedback). Other kinds ignore ``residual``.
    """
    if spec.kind != "topk":
        return Encoded(encode_update(delta, spec))
    kept = residual or {}
    corrected = {k: (v + kept[k]) if k in kept else v for k, v in delta.items()}
    encoded = encode_update(corrected, spec)
    decoded = decode_update(encoded, corrected, spec)
    left = {
        k: (v - decoded[k]).to(torch.float32) for k, v in corrected.items() if v.is_floating_point()
    }
    return Encoded(encoded, left)


def load_encoded_update(
    data: bytes,
    reference: Mapping[str, torch.Tensor],
    spec: CompressionSpec,
    *,
    max_norm: float | None = None,
) -> dict[str, torch.Tensor]:
    """An uploaded update (safetensors, encoded as ``spec``) as the dense float32 delta
    of ``reference``, checked as :func:`~peertrain.ml.weights.load_update` checks one.

    Raises
    ------
    NotSafetensors
        ``data`` is not a safetensors file.
    CompressionInvalid
        It does not decode against the model (see the module).
    UpdateInvalid
        The decoded delta fails the checks (shapes, finite values, the norm bound).
    """
    if spec.kind == "none":
        return load_update(data, reference, max_norm=max_norm)
    dense = decode_update(state_from_bytes(data), reference, spec)
    problems = update_problems(dense, reference, max_norm=max_norm)
    if problems:
        raise UpdateInvalid(problems[0].message, issues=problems)
    return dense
