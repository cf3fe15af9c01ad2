"""What an upload is, from its first bytes (never from its name): ZIP, gzip or text."""

from __future__ import annotations

import codecs
from typing import Literal

from peertrain.dataset.domain.errors import EmptyFile, NotCsvOrZip, NotUtf8

__all__ = ["SNIFF_BYTES", "Format", "check_text", "detect_format"]

Format = Literal["zip", "gzip", "text"]

SNIFF_BYTES = 64 * 1024
"""How much of the start of a file decides its format."""

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
_GZIP_MAGIC = b"\x1f\x8b"
_BINARY_MAGIC = (
    b"\x89PNG",
    b"\xff\xd8\xff",  # JPEG
    b"GIF8",
    b"%PDF",
    b"\x7fELF",
    b"MZ",
    b"BZh",
    b"\xfd7zXZ",
    b"7z\xbc\xaf",
    b"Rar!",
    b"\x28\xb5\x2f\xfd",  # zstd
    b"PAR1",  # Parquet
    b"\x93NUMPY",
    b"SQLite format 3",
    b"\xd0\xcf\x11\xe0",  # OLE (old Office)
)
_CONTROL = frozenset(range(32)) - {9, 10, 12, 13}


def detect_format(prefix: bytes, *, complete: bool, name: str = "the file") -> Format:
    """The container format of a file whose first bytes are ``prefix``.

    Parameters
    ----------
    prefix
        The first bytes (up to :data:`SNIFF_BYTES`).
    complete
        Whether ``prefix`` is the whole file.
    name
        How to name the file in errors.

    Raises
    ------
    EmptyFile
        Nothing at all.
    NotCsvOrZip
        A binary format other than ZIP and gzip.
    NotUtf8
        Text that is not UTF-8.
    """
    if not prefix:
        raise EmptyFile(f"{name} is empty")
    if prefix.startswith(_ZIP_MAGIC):
        return "zip"
    if prefix.startswith(_GZIP_MAGIC):
        return "gzip"
    check_text(prefix, complete=complete, name=name)
    return "text"


def check_text(prefix: bytes, *, complete: bool, name: str = "the file") -> str:
    """Decode the start of a text file strictly; refuse binary data and non-UTF-8.

    Returns the decoded text (a multi-byte character cut at the end of an incomplete
    ``prefix`` is left out).
    """
    if prefix.startswith(_BINARY_MAGIC) or b"\x00" in prefix:
        raise NotCsvOrZip(f"{name} is neither CSV text nor a ZIP archive", entry=name)
    try:
        text = codecs.getincrementaldecoder("utf-8")("strict").decode(prefix, final=complete)
    except UnicodeDecodeError as exc:
        line = prefix[: exc.start].count(b"\n") + 1
        raise NotUtf8(f"{name} is not UTF-8 text (line {line})", line=line) from None
    controls = sum(1 for ch in text[:SNIFF_BYTES] if ord(ch) in _CONTROL)
    if controls > max(8, len(text[:SNIFF_BYTES]) // 100):
        raise NotCsvOrZip(f"{name} is neither CSV text nor a ZIP archive", entry=name)
    return text
