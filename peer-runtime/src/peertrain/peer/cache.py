"""The shard cache: files named by their sha256, so a later round does not download again.

Bounded by count: when more than ``max_files`` are kept, the least recently used go
(a use touches the file's mtime). A file is trusted only after its sha256 was checked
again, so a damaged cache costs a download, never a wrong shard.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path

__all__ = ["ShardCache", "sha256_file"]

_NAME = re.compile(r"^[0-9a-f]{64}\.npz$")
CHUNK = 1024 * 1024


def sha256_file(path: Path) -> str:
    """The sha256 of ``path``'s bytes (hex)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class ShardCache:
    """Shards kept under ``directory`` as ``<sha256>.npz`` (mode 0700 directory).

    Parameters
    ----------
    directory
        Where the files live (created on demand).
    max_files
        How many shards to keep at most.
    """

    def __init__(self, directory: Path, max_files: int = 8) -> None:
        if max_files < 1:
            raise ValueError("max_files must be at least 1")
        self.directory = directory
        self.max_files = max_files
        self.hits = 0

    def path(self, sha256: str) -> Path:
        """Where the shard with this sha256 is (or would be) kept."""
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise ValueError("not a sha256 hex digest")
        return self.directory / f"{sha256}.npz"

    def get(self, sha256: str, size: int) -> Path | None:
        """The cached file, if it is there with this size and sha256 (else it is dropped)."""
        path = self.path(sha256)
        try:
            if path.stat().st_size != size or sha256_file(path) != sha256:
                path.unlink()
                return None
        except FileNotFoundError:
            return None
        os.utime(path)
        self.hits += 1
        return path

    def partial(self, sha256: str) -> Path:
        """A temporary path to download into before :meth:`commit`."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.directory / f".{sha256}.{os.getpid()}.part"

    def commit(self, partial: Path, sha256: str) -> Path:
        """Move a checked download into the cache, then drop the least recently used."""
        path = self.path(sha256)
        os.replace(partial, path)
        os.utime(path)
        self.evict(keep=path)
        return path

    def files(self) -> list[Path]:
        """Cached shards, most recently used first."""
        if not self.directory.is_dir():
            return []
        found = [p for p in self.directory.iterdir() if _NAME.match(p.name)]
        return sorted(found, key=lambda p: p.stat().st_mtime_ns, reverse=True)

    def evict(self, keep: Path | None = None) -> list[Path]:
        """Drop the least recently used shards beyond ``max_files``; the dropped ones."""
        files = self.files()
        if keep is not None and keep in files:
            files.remove(keep)
            files.insert(0, keep)
        dropped = files[self.max_files :]
        for path in dropped:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        return dropped
