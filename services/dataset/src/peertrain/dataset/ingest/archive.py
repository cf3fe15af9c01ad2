"""Opening an uploaded ZIP archive safely.

Checks, before anything is extracted:

* the end-of-central-directory record: at most ``max_entries`` entries, and a central
  directory of bounded size (so listing the archive cannot exhaust memory);
* every entry: no absolute path or ``..`` component (either slash), no symlink, no
  encryption, no nested archive, a known compression method;
* the contents: only CSV files; or images in ``<class>/<file>`` folders; or images
  with one CSV of their file names and labels (``labels_entry``).

While extracting, :class:`~.limits.BoundedReader` counts what each entry really
expands to (the sizes in the headers are never trusted).
"""

from __future__ import annotations

import stat
import struct
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from peertrain.common.features import IMAGE_SUFFIXES, is_junk
from peertrain.dataset.domain.errors import (
    BadArchiveEntry,
    EmptyFile,
    NotCsvOrZip,
    TooManyEntries,
)

from .limits import BoundedReader, InflateBudget

__all__ = ["ArchiveEntry", "ArchiveKind", "SafeZip", "is_zip_member_archive"]

ArchiveKind = Literal["table", "images"]

_CSV_SUFFIXES = (".csv",)
_ARCHIVE_SUFFIXES = (".zip", ".jar", ".gz", ".tgz", ".tar", ".bz2", ".xz", ".7z", ".rar", ".zst")
_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_CENTRAL_RECORD = 46  # fixed part of a central directory header
_MAX_NAME = 1024


@dataclass(frozen=True)
class ArchiveEntry:
    """One file entry that passed the checks."""

    name: str
    info: zipfile.ZipInfo


def _entries_in_eocd(path: Path) -> tuple[int, int]:
    """(entries, central directory size) from the end records; (-1, -1) if none found."""
    size = path.stat().st_size
    with path.open("rb") as f:
        tail_len = min(size, 65_535 + 22 + 20)
        f.seek(size - tail_len)
        tail = f.read(tail_len)
        at = tail.rfind(_EOCD)
        if at < 0 or len(tail) - at < 22:
            return -1, -1
        _, _, _, _, entries, cd_size, _, _ = struct.unpack("<4s4H2LH", tail[at : at + 22])
        locator = tail.rfind(_EOCD64_LOCATOR, 0, at)
        if locator >= 0 and locator + 20 <= at:
            _, _, eocd64_at, _ = struct.unpack("<4sLQL", tail[locator : locator + 20])
            if 0 <= eocd64_at <= size - 56:
                f.seek(eocd64_at)
                record = f.read(56)
                if record[:4] == b"PK\x06\x06":
                    entries, cd_size = struct.unpack("<QQ", record[32:40] + record[40:48])
    return int(entries), int(cd_size)


def _check_name(name: str) -> None:
    parts = name.replace("\\", "/").split("/")
    if (
        not name
        or name.startswith(("/", "\\"))
        or (len(name) > 1 and name[1] == ":")
        or "\x00" in name
        or ".." in parts
        or len(name) > _MAX_NAME
    ):
        raise BadArchiveEntry(f"unsafe path in archive: {name!r}", entry=name)


def _check_entry(info: zipfile.ZipInfo) -> None:
    name = info.filename
    _check_name(name)
    mode = (info.external_attr >> 16) & 0xFFFF
    if stat.S_ISLNK(mode):
        raise BadArchiveEntry(f"symlink entries are not allowed: {name!r}", entry=name)
    if info.flag_bits & 0x1:
        raise BadArchiveEntry(f"encrypted entries are not allowed: {name!r}", entry=name)
    if info.is_dir():
        return
    if name.lower().endswith(_ARCHIVE_SUFFIXES):
        raise BadArchiveEntry(f"nested archives are not allowed: {name!r}", entry=name)
    if info.compress_type not in _METHODS:
        raise BadArchiveEntry(
            f"unsupported compression method {info.compress_type} in {name!r}", entry=name
        )


class SafeZip:
    """An uploaded archive, checked; entries are opened through a budget.

    Parameters
    ----------
    path
        The archive on local disk.
    max_entries
        Most entries allowed (directories included).
    """

    def __init__(self, path: Path, *, max_entries: int) -> None:
        self.path = path
        self.size = path.stat().st_size
        entries, cd_size = _entries_in_eocd(path)
        if entries < 0:
            raise NotCsvOrZip("the file is not a readable ZIP archive")
        if entries > max_entries or cd_size > max_entries * (_CENTRAL_RECORD + 2 * _MAX_NAME):
            raise TooManyEntries(
                f"the archive has more than {max_entries} entries", max_entries=max_entries
            )
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise NotCsvOrZip(f"the file is not a readable ZIP archive: {exc}") from None
        infos = self._zip.infolist()
        if len(infos) > max_entries:
            self._zip.close()
            raise TooManyEntries(
                f"the archive has more than {max_entries} entries", max_entries=max_entries
            )
        try:
            for info in infos:
                _check_entry(info)
        except BaseException:
            self._zip.close()
            raise
        files = [i for i in infos if not i.is_dir() and not is_junk(i.filename)]
        self.entries = sorted((ArchiveEntry(i.filename, i) for i in files), key=lambda e: e.name)
        self.labels_entry: ArchiveEntry | None = None
        """An image archive's CSV of file names and labels, when it has one."""
        self.kind = self._classify()

    def _classify(self) -> ArchiveKind:
        if not self.entries:
            self.close()
            raise EmptyFile("the archive holds no CSV or image files")
        lowered = [e.name.lower() for e in self.entries]
        if all(n.endswith(_CSV_SUFFIXES) for n in lowered):
            return "table"
        if all(n.endswith(IMAGE_SUFFIXES) for n in lowered):
            return "images"
        tables = [
            e for e, n in zip(self.entries, lowered, strict=True) if n.endswith(_CSV_SUFFIXES)
        ]
        images = [
            e for e, n in zip(self.entries, lowered, strict=True) if n.endswith(IMAGE_SUFFIXES)
        ]
        if len(tables) == 1 and len(images) + 1 == len(self.entries):
            self.labels_entry, self.entries = tables[0], images
            return "images"
        odd = next(
            (
                e.name
                for e, n in zip(self.entries, lowered, strict=True)
                if not n.endswith(_CSV_SUFFIXES + IMAGE_SUFFIXES)
            ),
            self.entries[-1].name,  # both kinds mixed
        )
        self.close()
        raise BadArchiveEntry(
            f"unsupported entry {odd!r}: an archive holds CSV files, or images (.png, .jpg) "
            "in one folder per class or with one CSV of file names and labels",
            entry=odd,
        )

    def budget(self, cap: int, max_ratio: float, min_ratio_bytes: int) -> InflateBudget:
        """A fresh expansion budget for one read-through of the archive."""
        return InflateBudget(cap, max_ratio, min_ratio_bytes, self.size)

    @contextmanager
    def open(self, entry: ArchiveEntry, budget: InflateBudget) -> Iterator[BoundedReader]:
        """Open one entry for reading, every byte charged to ``budget``."""
        try:
            raw = self._zip.open(entry.info)
        except (zipfile.BadZipFile, RuntimeError, NotImplementedError) as exc:
            raise BadArchiveEntry(f"cannot read {entry.name!r}: {exc}", entry=entry.name) from None
        reader = BoundedReader(raw, budget, entry.info.compress_size, entry.name)
        try:
            yield reader
        finally:
            reader.close()

    def close(self) -> None:
        """Close the archive file."""
        self._zip.close()

    def __enter__(self) -> SafeZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def is_zip_member_archive(prefix: bytes) -> bool:
    """Whether an entry's first bytes are themselves a ZIP archive."""
    return prefix.startswith((b"PK\x03\x04", b"PK\x05\x06"))
