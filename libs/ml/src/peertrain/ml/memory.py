"""Keeping a long-running process's memory flat while tensors come and go.

glibc serves large allocations with their own ``mmap`` only above a threshold that it
raises each time such a block is freed (up to 32 MiB). Past that, model-sized tensors
(decoded updates, temporaries) come from the heap, which fragments and grows round
after round. Fixing the threshold returns every freed tensor to the system at once.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["return_freed_tensors_to_os"]

_M_MMAP_THRESHOLD = -3


def return_freed_tensors_to_os(threshold: int = 1 << 20) -> bool:
    """Serve every allocation of at least ``threshold`` bytes by its own ``mmap``.

    Call once at start-up of a process that handles many model-sized tensors (the
    aggregator). Same effect as ``MALLOC_MMAP_THRESHOLD_=<threshold>`` in the environment.

    Returns
    -------
    bool
        Whether the setting took (only on glibc; elsewhere nothing changes).
    """
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, int(threshold)))
