"""Counting what archives expand to, while expanding them (headers are not trusted)."""

from __future__ import annotations

import gzip
import io
import lzma
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import IO

from peertrain.dataset.domain.errors import ArchiveBomb, BadArchiveEntry

__all__ = ["BoundedReader", "InflateBudget"]


@dataclass
class InflateBudget:
    """The expansion allowed to one archive (or one gzip file) in one read-through.

    Parameters
    ----------
    cap
        Total decompressed bytes allowed.
    max_ratio
        Largest decompressed/compressed ratio, per entry and for the whole archive.
    min_ratio_bytes
        The ratio is checked once at least this much came out (tiny entries are
        harmless whatever their ratio).
    archive_size
        The archive's true size on disk.
    """

    cap: int
    max_ratio: float
    min_ratio_bytes: int
    archive_size: int
    total: int = field(default=0, init=False)

    def charge(self, produced: int, entry_out: int, entry_in: int, entry: str) -> None:
        """Count ``produced`` more bytes out of ``entry``; refuse a bomb at once."""
        self.total += produced
        if self.total > self.cap:
            raise ArchiveBomb(
                f"the archive expands to more than {self.cap} bytes",
                entry=entry,
                max_bytes=self.cap,
            )
        if entry_out >= self.min_ratio_bytes and entry_out > self.max_ratio * max(entry_in, 1):
            raise ArchiveBomb(
                f"{entry!r} has a compression ratio over {self.max_ratio:g}",
                entry=entry,
                max_ratio=self.max_ratio,
            )
        if self.total >= self.min_ratio_bytes and self.total > self.max_ratio * max(
            self.archive_size, 1
        ):
            raise ArchiveBomb(
                f"the archive has a compression ratio over {self.max_ratio:g}",
                entry=entry,
                max_ratio=self.max_ratio,
            )


class BoundedReader(io.RawIOBase):
    """A decompressing stream that charges every byte it yields to a budget.

    Parameters
    ----------
    raw
        The decompressing stream (a ZIP entry, a gzip file).
    budget
        Shared by every entry of one archive.
    compressed_size
        The entry's compressed size (its share of the archive).
    entry
        The entry's name, for errors.
    """

    def __init__(
        self,
        raw: io.BufferedIOBase | IO[bytes],
        budget: InflateBudget,
        compressed_size: int,
        entry: str,
    ) -> None:
        super().__init__()
        self._raw = raw
        self._budget = budget
        self._compressed = compressed_size
        self._entry = entry
        self.produced = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        try:
            data = self._raw.read(len(view))
        except (zipfile.BadZipFile, gzip.BadGzipFile, zlib.error, lzma.LZMAError, EOFError) as exc:
            raise BadArchiveEntry(f"{self._entry!r} is corrupt: {exc}", entry=self._entry) from None
        n = len(data)
        view[:n] = data
        if n:
            self.produced += n
            self._budget.charge(n, self.produced, self._compressed, self._entry)
        return n

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()
