"""Checking an update against the model it claims to update.

An update is acceptable when it has the reference's keys, with the same shapes and
dtypes, every value is finite, and its L2 norm is at most the bound. The header of a
safetensors file is checked against the reference *before* its data is decoded. Each
problem found carries a :class:`~peertrain.ml.problems.ProblemCode`, so callers never
have to read the message to know what went wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from ..errors import UpdateInvalid
from ..problems import ProblemCode, UpdateProblem
from .codec import SafetensorsHeader, read_header, state_from_bytes
from .delta import l2_norm

__all__ = ["header_problems", "load_update", "update_problems", "validate_update"]

_WRONG = ProblemCode.WRONG_TENSORS


def _key_problems(names: set[str], reference: Mapping[str, torch.Tensor]) -> list[UpdateProblem]:
    problems = []
    missing, extra = sorted(set(reference) - names), sorted(names - set(reference))
    if missing:
        problems.append(UpdateProblem(_WRONG, f"missing tensors: {', '.join(missing[:10])}"))
    if extra:
        problems.append(UpdateProblem(_WRONG, f"unexpected tensors: {', '.join(extra[:10])}"))
    return problems


def _layout_problem(
    name: str, shape: tuple[int, ...], dtype: torch.dtype, ref: torch.Tensor
) -> UpdateProblem | None:
    if tuple(shape) != tuple(ref.shape):
        return UpdateProblem(_WRONG, f"{name}: shape {list(shape)}, expected {list(ref.shape)}")
    if dtype != ref.dtype:
        return UpdateProblem(_WRONG, f"{name}: dtype {dtype}, expected {ref.dtype}")
    return None


def _header_problems(
    header: SafetensorsHeader, reference: Mapping[str, torch.Tensor]
) -> list[UpdateProblem]:
    problems = _key_problems(set(header.tensors), reference)
    for name in sorted(set(header.tensors) & set(reference)):
        info = header.tensors[name]
        problem = _layout_problem(name, info.shape, info.dtype, reference[name])
        if problem:
            problems.append(problem)
    return problems


def header_problems(header: SafetensorsHeader, reference: Mapping[str, torch.Tensor]) -> list[str]:
    """Keys, shapes and dtypes of a safetensors header against the reference state."""
    return [p.message for p in _header_problems(header, reference)]


def update_problems(
    update: Mapping[str, torch.Tensor],
    reference_state: Mapping[str, torch.Tensor],
    *,
    max_norm: float | None = None,
) -> list[UpdateProblem]:
    """Every reason to refuse ``update`` as a delta of ``reference_state``, coded.

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
    list of UpdateProblem
        One per problem; empty when the update is acceptable.
    """
    problems = _key_problems(set(update), reference_state)
    for name in sorted(set(update) & set(reference_state)):
        tensor = update[name]
        if not isinstance(tensor, torch.Tensor):
            problems.append(UpdateProblem(_WRONG, f"{name}: not a tensor"))
            continue
        problem = _layout_problem(name, tuple(tensor.shape), tensor.dtype, reference_state[name])
        if problem:
            problems.append(problem)
        elif tensor.is_floating_point():
            bad = int(tensor.numel() - torch.isfinite(tensor).sum())
            if bad:
                problems.append(
                    UpdateProblem(
                        ProblemCode.NON_FINITE, f"{name}: {bad} non-finite values (NaN or infinity)"
                    )
                )
    if problems:
        return problems
    norm = l2_norm(update)
    if not math.isfinite(norm):
        problems.append(UpdateProblem(ProblemCode.NORM_TOO_LARGE, "the update's L2 norm overflows"))
    elif max_norm is not None and norm > max_norm:
        problems.append(
            UpdateProblem(
                ProblemCode.NORM_TOO_LARGE, f"L2 norm {norm:.6g} exceeds the bound {max_norm:.6g}"
            )
        )
    return problems


def validate_update(
    update: Mapping[str, torch.Tensor],
    reference_state: Mapping[str, torch.Tensor],
    *,
    max_norm: float | None = None,
) -> list[str]:
    """The messages of :func:`update_problems`: one human sentence per problem."""
    return [p.message for p in update_problems(update, reference_state, max_norm=max_norm)]


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
        With every problem :func:`update_problems` finds, coded.
    """
    header = read_header(data, len(data))
    problems = _header_problems(header, reference_state)
    if problems:
        raise UpdateInvalid(problems[0].message, issues=problems)
    update = state_from_bytes(data)
    problems = update_problems(update, reference_state, max_norm=max_norm)
    if problems:
        raise UpdateInvalid(problems[0].message, issues=problems)
    return update
