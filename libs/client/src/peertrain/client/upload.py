"""Dataset uploads: the file streams from disk in chunks, reporting progress as it goes."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from .errors import ChecksumMismatch

__all__ = [
    "SHA256_HEADER",
    "DownloadTarget",
    "Progress",
    "ProgressReader",
    "file_part",
    "upload_fields",
]

Progress = Callable[[int, int], None]
SHA256_HEADER = "X-Content-SHA256"
"""The header a download's sha256 is announced in (lowercase hex)."""
"""``progress(bytes_sent, total_bytes)``, called after every chunk read for sending."""


class ProgressReader:
    """A binary file that calls ``progress`` as httpx reads it for the request body.

    httpx reads a file part in 64 KiB chunks (never the whole file), takes the length
    from ``fileno()``, and seeks back to 0 before each send: a retry (after a refresh)
    reports from zero again.

    Parameters
    ----------
    file
        Opened for binary reading.
    progress
        Told ``(sent, total)``.
    """

    def __init__(self, file: IO[bytes], progress: Progress | None) -> None:
        self._file = file
        self._progress = progress
        self.total = os.fstat(file.fileno()).st_size
        self.sent = 0

    def fileno(self) -> int:
        """The underlying descriptor (httpx sizes the part with it)."""
        return self._file.fileno()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        """Seek, and count from there."""
        position = self._file.seek(offset, whence)
        self.sent = position
        return position

    def tell(self) -> int:
        """The current position."""
        return self._file.tell()

    def read(self, size: int = -1) -> bytes:
        """Read a chunk and report it."""
        chunk = self._file.read(size)
        self.sent += len(chunk)
        if self._progress is not None:
            self._progress(self.sent, self.total)
        return chunk


def upload_fields(
    *,
    name: str | None,
    label_column: str | None,
    holdout_fraction: float | None,
    image_size: str | None,
    holdout_seed: int | None = None,
    image_fit: str | None = None,
    missing_values: str | Sequence[str] | None = None,
) -> dict[str, str]:
    """The optional form fields that go with the file (``missing_values``: a list, or
    its comma-separated text)."""
    if missing_values is not None and not isinstance(missing_values, str):
        missing_values = ",".join(missing_values)
    fields: dict[str, Any] = {
        "name": name,
        "label_column": label_column,
        "holdout_fraction": holdout_fraction,
        "holdout_seed": holdout_seed,
        "image_size": image_size,
        "image_fit": image_fit,
        "missing_values": missing_values,
    }
    return {k: str(v) for k, v in fields.items() if v is not None}


def file_part(path: Path, reader: ProgressReader) -> dict[str, tuple[str, Any, str]]:
    """The ``files=`` argument of the upload request."""
    return {"file": (path.name, reader, "application/octet-stream")}


class DownloadTarget:
    """A file written under a temporary name, renamed into place only when complete and,
    when the server announced its sha256 (``X-Content-SHA256``), only when it matches.

    Parameters
    ----------
    dest
        The final path.
    response
        The streamed answer (its ``Content-Length`` is the total, when sent).
    progress
        Told ``(received, total)``; total is 0 when unknown.

    Raises
    ------
    ChecksumMismatch
        On leaving, when the bytes received do not have the announced sha256; the
        partial file is deleted and ``dest`` left as it was.
    """

    def __init__(self, dest: Path, response: Any, progress: Progress | None) -> None:
        self.dest = dest
        self.tmp = dest.with_name(f".{dest.name}.part")
        length = response.headers.get("content-length", "")
        self.total = int(length) if length.isdigit() else 0
        self.received = 0
        self.expected_sha256 = (response.headers.get(SHA256_HEADER) or "").strip().lower()
        self._hash = hashlib.sha256()
        self._progress = progress
        self._out: IO[bytes] | None = None

    def __enter__(self) -> DownloadTarget:
        self._out = self.tmp.open("wb")
        return self

    def write(self, chunk: bytes) -> None:
        """Append a chunk and report it."""
        assert self._out is not None
        self._out.write(chunk)
        self._hash.update(chunk)
        self.received += len(chunk)
        if self._progress is not None:
            self._progress(self.received, self.total)

    def __exit__(self, exc_type: object, *_: object) -> None:
        assert self._out is not None
        self._out.close()
        actual = self._hash.hexdigest()
        if exc_type is None and self.expected_sha256 and actual != self.expected_sha256:
            self.tmp.unlink(missing_ok=True)
            raise ChecksumMismatch(str(self.dest), self.expected_sha256, actual)
        if exc_type is None:
            os.replace(self.tmp, self.dest)
        else:
            self.tmp.unlink(missing_ok=True)
