"""Keeping a long-running process's memory flat while large buffers come and go.

glibc serves large allocations with their own ``mmap`` only above a threshold that it
raises each time such a block is freed (up to 32 MiB). Past that, big buffers (decoded
updates, CSV blocks, columns) come from heap arenas, which fragment and are rarely
returned to the system, so the resident size ratchets up to the largest working set
ever seen. Fixing the threshold returns every freed buffer to the system at once.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["return_freed_memory_to_os"]

_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


def return_freed_memory_to_os(threshold: int = 1 << 20, *, arena_max: int | None = None) -> bool:
    """Serve every allocation of at least ``threshold`` bytes by its own ``mmap``.

    Call once at start-up of a process that handles many large buffers (the aggregator,
    the dataset service). Same effect as ``MALLOC_MMAP_THRESHOLD_=<threshold>`` (and
    ``MALLOC_ARENA_MAX=<arena_max>``) in the environment.

    Parameters
    ----------
    threshold
        Bytes from which an allocation gets its own mapping.
    arena_max
        At most this many heap arenas (one per thread by default); ``None`` keeps glibc's.

    Returns
    -------
    bool
        Whether the settings took (only on glibc; elsewhere nothing changes).
    """
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    took = bool(mallopt(_M_MMAP_THRESHOLD, int(threshold)))
    if arena_max is not None:
        took = bool(mallopt(_M_ARENA_MAX, int(arena_max))) and took
    return took
