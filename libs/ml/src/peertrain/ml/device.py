"""Choosing the torch device, bounding torch's CPU threads, seeding a device's generators."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

__all__ = ["limit_threads", "seed_generators", "seeded", "select_device"]

_GENERATORS = threading.RLock()
"""Held by the thread whose seeded work draws from torch's global generators."""


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


def seed_generators(seed: int, device: torch.device) -> None:
    """Seed the random generators that computing on ``device`` draws from.

    On the CPU that is torch's default (CPU) generator alone, seeded as
    ``torch.manual_seed`` seeds it. ``torch.manual_seed`` also seeds every other
    backend torch knows; on a machine without CUDA, XPU or MTIA it queues each of those
    seedings with a formatted stack trace, for a device that never starts: about a
    millisecond per call, twice per task trained. On an accelerator, every generator is
    seeded, as ``torch.manual_seed`` does.
    """
    if device.type == "cpu":
        torch.default_generator.manual_seed(seed)
    else:
        torch.manual_seed(seed)


@contextmanager
def seeded(seed: int, device: torch.device, *, devices: Sequence[int] = ()) -> Iterator[None]:
    """torch's global generators seeded with ``seed`` inside (:func:`seed_generators`),
    restored after, and drawn from by this thread alone meanwhile.

    They are one per process, and the services build models and train on worker
    threads (an aggregator makes several jobs' version 0 at once, beside evaluations and
    exports): without the lock, two seeded builds interleave their draws, and one
    restoring the state it saved rewinds the other's, so a job's weights would depend
    on what else ran at that moment. Every seeded use of the global generators goes
    through here; others wait while one runs (a model build takes milliseconds, and a
    peer trains one task at a time).

    Parameters
    ----------
    devices
        The CUDA devices whose generators are saved and restored too.
    """
    with _GENERATORS, torch.random.fork_rng(devices=list(devices)):
        seed_generators(seed, device)
        yield
