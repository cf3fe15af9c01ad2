"""Writing ``.npy`` and ``.npz`` files row block by row block (never whole in memory).

The ``.npy`` header states the final shape, so the row count must be known before the
first block is written; writers check it when closed. ``.npz`` archives are written
uncompressed (``ZIP_STORED``, ZIP64), which ``numpy.load`` reads like any ``.npz``.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import numpy as np
from numpy.lib import format as npformat
from numpy.typing import DTypeLike, NDArray

__all__ = ["NpyBlockReader", "NpyWriter", "NpzWriter", "write_npz"]


def _write_header(out: IO[bytes], shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
    header = {"descr": npformat.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
    if len(repr(shape)) > 60_000:  # version 1.0 headers are limited to 64 KiB
        npformat.write_array_header_2_0(out, header)
    else:
        npformat.write_array_header_1_0(out, header)


class NpyWriter:
    """Writes one C-ordered array of a known shape, a block of rows at a time.

    Parameters
    ----------
    out
        A binary stream (a file, or a member of a ZIP being written).
    shape
        The final shape; ``shape[0]`` rows must be appended in all.
    dtype
        The element type; blocks are cast to it.
    """

    def __init__(self, out: IO[bytes], shape: tuple[int, ...], dtype: DTypeLike) -> None:
        self.out = out
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.rows = 0
        _write_header(out, self.shape, self.dtype)

    def append(self, block: NDArray[Any]) -> None:
        """Append rows (``block.shape[1:]`` must match)."""
        if block.shape[1:] != self.shape[1:]:
            raise ValueError(f"block shape {block.shape} does not fit {self.shape}")
        if self.rows + len(block) > self.shape[0]:
            raise ValueError(f"more than {self.shape[0]} rows appended")
        self.out.write(np.ascontiguousarray(block, dtype=self.dtype).tobytes())
        self.rows += len(block)

    def check_complete(self) -> None:
        """Raise unless exactly ``shape[0]`` rows were appended."""
        if self.rows != self.shape[0]:
            raise ValueError(f"{self.rows} rows appended, the header says {self.shape[0]}")


class NpzWriter:
    """An ``.npz`` with ``X`` (written in row blocks) and ``y``, in the ``npz-v1`` format.

    Parameters
    ----------
    path
        Where to write.
    rows
        Rows in all.
    sample_shape
        Shape of one sample of ``X``.
    dtype
        ``X``'s element type: ``float32`` (encoded values) or ``uint8`` (pixels).
    """

    def __init__(
        self, path: Path, rows: int, sample_shape: tuple[int, ...], dtype: DTypeLike = np.float32
    ) -> None:
        self.path = path
        self._zip = zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True)
        self._member = self._zip.open("X.npy", "w", force_zip64=True)
        self._x = NpyWriter(self._member, (rows, *sample_shape), dtype)
        self._y: list[NDArray[np.int32]] = []  # int32 while collecting: half the memory

    @property
    def rows(self) -> int:
        """Rows written so far."""
        return self._x.rows

    def append(self, x: NDArray[Any], y: NDArray[Any]) -> None:
        """Append samples and their labels."""
        if len(x) != len(y):
            raise ValueError("x and y differ in length")
        self._x.append(x)
        self._y.append(np.asarray(y, dtype=np.int32))

    def close(self) -> None:
        """Finish ``X``, write ``y`` and close the archive."""
        self._x.check_complete()
        self._member.close()
        y = np.concatenate(self._y).astype(np.int64) if self._y else np.empty(0, np.int64)
        self._y = []
        with self._zip.open("y.npy", "w", force_zip64=True) as member:
            npformat.write_array(member, y, allow_pickle=False)
        self._zip.close()

    def abort(self) -> None:
        """Close without completing (the file is then garbage)."""
        try:
            self._member.close()
        finally:
            self._zip.close()

    def __enter__(self) -> NpzWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_npz(path: Path, x: NDArray[Any], y: NDArray[Any]) -> None:
    """Write a small ``npz-v1`` file in one go."""
    with NpzWriter(path, len(x), tuple(x.shape[1:])) as writer:
        writer.append(x, y)


class NpyBlockReader:
    """Reads a C-ordered ``.npy`` file a block of rows at a time.

    Parameters
    ----------
    path
        The file.
    """

    def __init__(self, path: Path) -> None:
        self._file = path.open("rb")
        version = npformat.read_magic(self._file)
        if version == (1, 0):
            shape, fortran, dtype = npformat.read_array_header_1_0(self._file)
        else:
            shape, fortran, dtype = npformat.read_array_header_2_0(self._file)
        if fortran or dtype.hasobject:
            self._file.close()
            raise ValueError(f"{path} is not a plain C-ordered array")
        self.shape: tuple[int, ...] = tuple(shape)
        self.dtype: np.dtype[Any] = dtype
        self._row_items = int(np.prod(self.shape[1:], dtype=np.int64))
        self.rows_read = 0

    def read(self, rows: int) -> NDArray[Any]:
        """The next ``rows`` rows (fewer at the end, empty when done)."""
        rows = min(rows, self.shape[0] - self.rows_read)
        count = rows * self._row_items
        data = np.fromfile(self._file, dtype=self.dtype, count=count)
        if len(data) != count:
            raise ValueError("the .npy file is truncated")
        self.rows_read += rows
        return data.reshape((rows, *self.shape[1:]))

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    def __enter__(self) -> NpyBlockReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
