"""Weight deltas: ``new - base``, applying them, and their L2 norm."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

__all__ = ["apply_delta", "compute_delta", "l2_norm"]


def _same_keys(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor]) -> None:
    if set(a) != set(b):
        missing, extra = sorted(set(b) - set(a)), sorted(set(a) - set(b))
        raise ValueError(f"state dicts differ: missing {missing}, unexpected {extra}")


def compute_delta(
    new: Mapping[str, torch.Tensor], base: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """``new - base`` for every tensor, on the CPU, in each tensor's own dtype.

    Raises
    ------
    ValueError
        When keys, shapes or dtypes differ.
    """
    _same_keys(new, base)
    delta = {}
    for name, b in base.items():
        n = new[name]
        if n.shape != b.shape or n.dtype != b.dtype:
            raise ValueError(f"{name}: {n.dtype}{list(n.shape)} vs {b.dtype}{list(b.shape)}")
        delta[name] = (n.detach().cpu() - b.detach().cpu()).contiguous()
    return delta


def apply_delta(
    base: Mapping[str, torch.Tensor], delta: Mapping[str, torch.Tensor], scale: float = 1.0
) -> dict[str, torch.Tensor]:
    """``base + scale * delta``, in ``base``'s dtypes and devices.

    Raises
    ------
    ValueError
        When keys or shapes differ.
    """
    _same_keys(delta, base)
    out = {}
    for name, b in base.items():
        d = delta[name].to(device=b.device, dtype=b.dtype)
        if d.shape != b.shape:
            raise ValueError(f"{name}: shape {list(d.shape)} vs {list(b.shape)}")
        out[name] = b.detach() + (d if scale == 1.0 else d * scale)
    return out


def l2_norm(state: Mapping[str, torch.Tensor]) -> float:
    """The L2 norm of all values together, computed in float64.

    Each tensor's norm is taken in float64 and the squares are added with
    :func:`math.fsum` in key order, so the result does not depend on dict order.
    Integer and boolean tensors (BatchNorm's ``num_batches_tracked``) count as their
    float64 values.
    """
    squares = [_norm64(state[name]) ** 2 for name in sorted(state)]
    return math.sqrt(math.fsum(squares))


def _norm64(tensor: torch.Tensor) -> float:
    t = tensor.detach()
    if not (t.is_floating_point() or t.is_complex()):
        t = t.to(torch.float64)  # vector_norm refuses integer tensors, even with dtype=
    return float(torch.linalg.vector_norm(t, dtype=torch.float64))
