"""The uploaded file on local disk, recognised by its content: CSV text, gzip or ZIP."""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from peertrain.dataset.domain.errors import BadArchiveEntry
from peertrain.dataset.domain.limits import Limits

from .archive import ArchiveEntry, SafeZip, is_zip_member_archive
from .formats import SNIFF_BYTES, Format, detect_format
from .limits import BoundedReader, InflateBudget
from .text import HEADER_WINDOW, CsvLayout, sniff_layout

__all__ = ["TextSource", "UploadedFile"]

Kind = Literal["table", "images"]
_BUFFER = 1024 * 1024


@dataclass(frozen=True)
class TextSource:
    """One CSV text (the file itself, its gzip content, or a ZIP entry).

    ``open(budget)`` gives a fresh buffered binary stream of the (decompressed) text;
    every decompressed byte is charged to ``budget``.
    """

    name: str
    open: Callable[[InflateBudget], AbstractContextManager[BinaryIO]]
    path: Path | None = None
    """The file itself, when the text is a plain file (parsers may read it natively)."""


class UploadedFile:
    """An upload, classified: a table (one or more CSV texts) or an image archive.

    Parameters
    ----------
    path
        The raw upload on local disk.
    filename
        The name the user gave it (for messages only: the content decides the format).
    limits
        Expansion limits.
    """

    def __init__(self, path: Path, filename: str, limits: Limits) -> None:
        self.path = path
        self.filename = filename
        self.limits = limits
        self.size = path.stat().st_size
        with path.open("rb") as f:
            prefix = f.read(SNIFF_BYTES)
        self.format: Format = detect_format(
            prefix, complete=len(prefix) == self.size, name=filename
        )
        self.archive: SafeZip | None = None
        self.kind: Kind = "table"
        if self.format == "zip":
            self.archive = SafeZip(path, max_entries=limits.max_entries)
            self.kind = self.archive.kind

    def budget(self) -> InflateBudget:
        """A fresh expansion budget for one read-through of the upload."""
        limits = self.limits
        return InflateBudget(
            limits.inflate_cap, limits.max_ratio, limits.min_ratio_bytes, self.size
        )

    def text_sources(self) -> list[TextSource]:
        """The CSV texts of a table upload, in order (ZIP entries sorted by name)."""
        if self.format == "text":
            return [TextSource(self.filename, self._open_plain, self.path)]
        if self.format == "gzip":
            return [TextSource(self.filename, self._open_gzip)]
        assert self.archive is not None
        return [TextSource(e.name, self._entry_opener(e)) for e in self.archive.entries]

    def image_entries(self) -> list[ArchiveEntry]:
        """The image entries of an image archive, sorted by name."""
        assert self.archive is not None and self.kind == "images"
        return list(self.archive.entries)

    def labels_entry(self) -> ArchiveEntry | None:
        """An image archive's CSV of file names and labels, if it has one."""
        assert self.archive is not None and self.kind == "images"
        return self.archive.labels_entry

    @contextmanager
    def open_entry(self, entry: ArchiveEntry, budget: InflateBudget) -> Iterator[BinaryIO]:
        """One archive entry's bytes, charged to ``budget``."""
        assert self.archive is not None
        with self.archive.open(entry, budget) as raw, io.BufferedReader(raw, _BUFFER) as f:
            yield f

    def layout(self, source: TextSource) -> CsvLayout:
        """The delimiter and header of one CSV text (refusing a nested archive)."""
        with source.open(self.budget()) as stream:
            prefix = stream.read(HEADER_WINDOW)
            complete = not stream.read(1)
        if self.format == "zip" and is_zip_member_archive(prefix):
            raise BadArchiveEntry(
                f"nested archives are not allowed: {source.name!r}", entry=source.name
            )
        return sniff_layout(prefix, complete=complete, name=source.name)

    @contextmanager
    def _open_plain(self, budget: InflateBudget) -> Iterator[BinaryIO]:
        with self.path.open("rb", buffering=_BUFFER) as f:
            yield f

    @contextmanager
    def _open_gzip(self, budget: InflateBudget) -> Iterator[BinaryIO]:
        raw = gzip.GzipFile(self.path, "rb")
        reader = BoundedReader(raw, budget, self.size, self.filename)
        with io.BufferedReader(reader, _BUFFER) as f:
            yield f

    def _entry_opener(
        self, entry: ArchiveEntry
    ) -> Callable[[InflateBudget], AbstractContextManager[BinaryIO]]:
        @contextmanager
        def open_entry(budget: InflateBudget) -> Iterator[BinaryIO]:
            assert self.archive is not None
            with self.archive.open(entry, budget) as raw, io.BufferedReader(raw, _BUFFER) as f:
                yield f

        return open_entry

    def close(self) -> None:
        """Release the archive, if any."""
        if self.archive is not None:
            self.archive.close()
