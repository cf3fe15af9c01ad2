"""Choosing the torch device and bounding torch's CPU threads."""

from __future__ import annotations

import torch

__all__ = ["limit_threads", "select_device"]


def select_device(prefer: str | None = None) -> torch.device:
    """The device to compute on: CUDA, then Apple's MPS, then the CPU.

    Parameters
    ----------
    prefer
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``, or ``None`` for the best one
        present. A preferred device that is absent falls back to the CPU.

    Returns
    -------
    torch.device
    """
    if prefer is not None:
        wanted = torch.device(prefer)
        if wanted.type == "cuda" and torch.cuda.is_available():
            return wanted
        if wanted.type == "mps" and torch.backends.mps.is_available():
            return wanted
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def limit_threads(threads: int | None) -> None:
    """Bound torch's intra-op CPU threads (a process-wide setting).

    Parameters
    ----------
    threads
        At least 1; ``None`` leaves torch's setting as it is.
    """
    if threads is None:
        return
    if threads < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
