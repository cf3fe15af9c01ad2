"""Checking an update against the model it claims to update.

An update is acceptable when it has the reference's keys, with the same shapes and
dtypes, every value is finite, and its L2 norm is at most the bound. The header of a
safetensors file is checked against the reference *before* its data is decoded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from ..errors import UpdateInvalid
from .codec import SafetensorsHeader, read_header, state_from_bytes
from .delta import l2_norm

__all__ = ["header_problems", "load_update", "validate_update"]


def _key_problems(names: set[str], reference: Mapping[str, torch.Tensor]) -> list[str]:
    problems = []
    missing, extra = sorted(set(reference) - names), sorted(names - set(reference))
    if missing:
        problems.append(f"missing tensors: {', '.join(missing[:10])}")
    if extra:
        problems.append(f"unexpected tensors: {', '.join(extra[:10])}")
    return problems


def _layout_problem(
    name: str, shape: tuple[int, ...], dtype: torch.dtype, ref: torch.Tensor
) -> str | None:
    if tuple(shape) != tuple(ref.shape):
        return f"{name}: shape {list(shape)}, expected {list(ref.shape)}"
    if dtype != ref.dtype:
        return f"{name}: dtype {dtype}, expected {ref.dtype}"
    return None


def header_problems(header: SafetensorsHeader, reference: Mapping[str, torch.Tensor]) -> list[str]:
    """Keys, shapes and dtypes of a safetensors header against the reference state."""
    problems = _key_problems(set(header.tensors), reference)
    for name in sorted(set(header.tensors) & set(reference)):
        info = header.tensors[name]
        problem = _layout_problem(name, info.shape, info.dtype, reference[name])
        if problem:
            problems.append(problem)
    return problems


def validate_update(
    update: Mapping[str, torch.Tensor],
    reference_state: Mapping[str, torch.Tensor],
    *,
    max_norm: float | None = None,
) -> list[str]:
    """Every reason to refuse ``update`` as a delta of ``reference_state``.

    Parameters
    ----------
    update
        The delta a peer sent.
    reference_state
        The model version the delta applies to.
    max_norm
        Bound on the update's L2 norm; ``None`` for no bound.

    Returns
    -------
    list of str
        One human sentence per problem; empty when the update is acceptable.
    """
    problems = _key_problems(set(update), reference_state)
    for name in sorted(set(update) & set(reference_state)):
        tensor = update[name]
        if not isinstance(tensor, torch.Tensor):
            problems.append(f"{name}: not a tensor")
            continue
        problem = _layout_problem(name, tuple(tensor.shape), tensor.dtype, reference_state[name])
        if problem:
            problems.append(problem)
        elif tensor.is_floating_point():
            bad = int(tensor.numel() - torch.isfinite(tensor).sum())
            if bad:
                problems.append(f"{name}: {bad} non-finite values (NaN or infinity)")
    if problems:
        return problems
    norm = l2_norm(update)
    if not math.isfinite(norm):
        problems.append("the update's L2 norm overflows")
    elif max_norm is not None and norm > max_norm:
        problems.append(f"L2 norm {norm:.6g} exceeds the bound {max_norm:.6g}")
    return problems


def load_update(
    data: bytes,
    reference_state: Mapping[str, torch.Tensor],
    *,
    max_norm: float | None = None,
) -> dict[str, torch.Tensor]:
    """Decode and validate an update; the header is checked before any data is decoded.

    Raises
    ------
    NotSafetensors
        When ``data`` is not a safetensors file (a pickle, a zip, ...): nothing in it is
        parsed beyond the 8-byte length prefix and, if plausible, a JSON header.
    UpdateInvalid
        With every problem :func:`validate_update` finds.
    """
    header = read_header(data, len(data))
    problems = header_problems(header, reference_state)
    if problems:
        raise UpdateInvalid(problems[0], problems=problems)
    update = state_from_bytes(data)
    problems = validate_update(update, reference_state, max_norm=max_norm)
    if problems:
        raise UpdateInvalid(problems[0], problems=problems)
    return update
