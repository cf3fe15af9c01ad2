"""The exact fold kernel: ``acc += rint(float64(u) * s)``, elementwise.

``acc`` holds integers (in float64, in units of a fixed grid); every term is rounded to
an integer on its own, so each addition is exact while ``|acc| < 2**53`` and the sum is
the same in any order. Two implementations give bit-identical results, since each step
is one correctly rounded IEEE operation and nothing is fused:

- on the CPU, a numba kernel (one pass, no temporaries), split across threads; without
  numba, numpy ufuncs over cache-sized chunks, split the same way (about a third of
  numba's speed: three passes over each chunk instead of one). Folds of fewer than
  :data:`NUMBA_MIN` values take numpy's way too: importing numba and compiling the
  kernel cost a process 3-5 s of CPU, which a small model's folds never earn back;
- elsewhere (CUDA), torch ops over chunks.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

import numpy as np
import torch

__all__ = ["fold_exact", "numba_available"]

_CHUNK = 1 << 16
_DEVICE_CHUNK = 1 << 24
_MIN_PER_THREAD = 1 << 20
NUMBA_MIN = 1 << 20
"""The fewest values a fold has for the numba kernel (numpy below: see above)."""
_Kernel = Callable[[np.ndarray, np.ndarray, float], None]


@cache
def _numba_kernel() -> _Kernel | None:
    if os.environ.get("PEERTRAIN_ML_NO_NUMBA"):
        return None
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency; kept for odd platforms
        return None

    @numba.njit(nogil=True, cache=False)
    def fold(acc: Any, u: Any, s: float) -> None:  # pragma: no cover - compiled
        for i in range(acc.shape[0]):
            acc[i] += np.rint(np.float64(u[i]) * s)

    kernel: _Kernel = fold
    return kernel


def _fold_numpy(acc: np.ndarray, u: np.ndarray, scale: float) -> None:
    s = np.float64(scale)  # a float64 scalar: the product is computed in float64
    buf = np.empty(min(_CHUNK, acc.shape[0]), dtype=np.float64)
    for start in range(0, acc.shape[0], _CHUNK):
        stop = min(acc.shape[0], start + _CHUNK)
        part = buf[: stop - start]
        np.multiply(u[start:stop], s, out=part)
        np.rint(part, out=part)
        target = acc[start:stop]
        np.add(target, part, out=target)


def numba_available() -> bool:
    """Whether the one-pass CPU kernel is in use."""
    return _numba_kernel() is not None


@cache
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="peertrain-fold")


def _fold_torch(acc: torch.Tensor, update: torch.Tensor, scale: float) -> None:
    chunk = _CHUNK if acc.device.type == "cpu" else _DEVICE_CHUNK
    buf = torch.empty(min(chunk, acc.numel()), dtype=torch.float64, device=acc.device)
    for start in range(0, acc.numel(), chunk):
        stop = min(acc.numel(), start + chunk)
        part = buf[: stop - start]
        part.copy_(update[start:stop])
        part.mul_(scale)
        part.round_()
        acc[start:stop].add_(part)


def fold_exact(acc: torch.Tensor, update: torch.Tensor, scale: float) -> None:
    """``acc += rint(float64(update) * scale)``, in place.

    Parameters
    ----------
    acc
        Contiguous 1-D float64 tensor of integers (grid units).
    update
        Contiguous 1-D floating tensor of the same length, on any device.
    scale
        Multiplier into grid units.
    """
    if acc.dtype != torch.float64 or acc.dim() != 1 or not acc.is_contiguous():
        raise ValueError("acc must be a contiguous 1-D float64 tensor")
    update = update.reshape(-1)
    if update.numel() != acc.numel():
        raise ValueError(f"update has {update.numel()} values, acc {acc.numel()}")
    if acc.device.type != "cpu":
        _fold_torch(acc, update.to(acc.device), scale)
        return
    kernel = (_numba_kernel() if acc.numel() >= NUMBA_MIN else None) or _fold_numpy
    if update.dtype not in (torch.float32, torch.float64):
        update = update.to(torch.float32)
    a, u = acc.numpy(), update.detach().cpu().contiguous().numpy()
    threads = min(torch.get_num_threads(), max(1, a.shape[0] // _MIN_PER_THREAD))
    if threads <= 1:
        kernel(a, u, scale)
        return
    bounds = np.linspace(0, a.shape[0], threads + 1).astype(np.int64)
    futures = [
        _pool(threads).submit(kernel, a[lo:hi], u[lo:hi], scale)
        for lo, hi in itertools.pairwise(bounds.tolist())
    ]
    for future in futures:
        future.result()
