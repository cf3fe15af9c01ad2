"""Updates spilled to temporary safetensors files, read back coordinate range by range.

Robust strategies need every update of a round at once, coordinate by coordinate. Holding
them would cost O(peers x model) memory; instead each update is written to a file when it
arrives, and :meth:`SpillStore.rows` reads one coordinate range of one tensor from every
file with ``pread`` into a reused ``(K, n)`` buffer: memory O(chunk x K). (No ``mmap``:
mapped pages would count in the process's resident memory until unmapped.)
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import weakref
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from ..weights.codec import SafetensorsHeader, read_header, state_to_bytes

__all__ = ["SpillStore"]


def _release(path: Path, fds: list[int]) -> None:
    while fds:
        os.close(fds.pop())
    shutil.rmtree(path, ignore_errors=True)


def _read_header(fd: int) -> SafetensorsHeader:
    size = os.fstat(fd).st_size
    head = os.pread(fd, 8, 0)
    (length,) = struct.unpack("<Q", head) if len(head) == 8 else (0,)
    return read_header(head + os.pread(fd, min(length, size), 8), size)


class SpillStore:
    """A temporary folder of safetensors files, one per update, removed on :meth:`close`.

    Parameters
    ----------
    directory
        Parent folder for the temporary folder (the system's temp dir by default).
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="peertrain-spill-", dir=directory))
        self._files: list[Path] = []
        self._fds: list[int] = []
        self._headers: list[SafetensorsHeader] = []
        # also run if the store is dropped without close(): no leaked files or descriptors
        self._cleanup = weakref.finalize(self, _release, self.path, self._fds)

    def __len__(self) -> int:
        return len(self._files)

    def put(self, tensors: Mapping[str, torch.Tensor]) -> None:
        """Write one update to its own file."""
        path = self.path / f"{len(self._files):06d}.safetensors"
        path.write_bytes(state_to_bytes(tensors))
        self._files.append(path)

    def _open(self) -> None:
        while len(self._fds) < len(self._files):
            fd = os.open(self._files[len(self._fds)], os.O_RDONLY)
            self._fds.append(fd)
            self._headers.append(_read_header(fd))

    def rows(self, name: str, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        """Values ``[start, stop)`` of the flattened tensor ``name``, one row per update.

        Parameters
        ----------
        out
            A C-contiguous buffer with at least ``len(self)`` rows and ``stop - start``
            columns, of the spilled dtype; the returned view of it is filled.
        """
        self._open()
        count = stop - start
        view = out[: len(self._fds), :count]
        for row, (fd, header) in enumerate(zip(self._fds, self._headers, strict=True)):
            info = header.tensors[name]
            offset = header.data_start + info.begin + start * view.itemsize
            target = memoryview(view[row]).cast("B")
            if os.preadv(fd, [target], offset) != target.nbytes:
                raise OSError(f"short read from {self._files[row]}")
        return view

    def close(self) -> None:
        """Close the files and remove the folder; idempotent."""
        self._headers.clear()
        self._cleanup()
