"""Process-wide memory tuning for the dataset service (called once, at start-up).

Validation and sharding allocate and free many large buffers (CSV blocks, columns,
row blocks). With glibc's defaults, buffers up to 32 MiB end up in heap arenas that
are rarely returned to the system, so the resident size ratchets up to the largest
working set ever seen, per thread. Two settings keep it near the live working set:

* a fixed ``M_MMAP_THRESHOLD`` of 1 MiB (and at most 4 heap arenas): large buffers are
  ``mmap``-ed and go back to the system when freed (the default threshold adapts
  upwards and stops doing so), by :func:`peertrain.common.memory.return_freed_memory_to_os`;
* Arrow's system allocator instead of its bundled mimalloc/jemalloc pools, which keep
  freed memory cached.
"""

from __future__ import annotations

import pyarrow as pa

from peertrain.common.memory import return_freed_memory_to_os

__all__ = ["tune_memory"]


def tune_memory() -> None:
    """Apply the settings above (a no-op where glibc's ``mallopt`` is unavailable)."""
    pa.set_memory_pool(pa.system_memory_pool())
    return_freed_memory_to_os(1024 * 1024, arena_max=4)
