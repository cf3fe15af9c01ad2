"""The shard cache: files named by their sha256, so a later round does not download again.

Bounded by count: when more than ``max_files`` are kept, the least recently used go
(a use touches the file's mtime, at most once a minute). A file is trusted only after
its sha256 was checked, so a damaged cache costs a download, never a wrong shard.

A peer trains the same shard round after round; hashing it again for every task cost
as much as reading it (a second or more a task for a shard of a gigabyte). So the check
is remembered with the file's identity (inode, size, mtime and ctime, in nanoseconds)
and made again only when that identity changed: writing to the file changes its ctime,
which no user-space call can set back. An identity is remembered only once its ctime
is :data:`SETTLED_S` old, because a write within the clock's granularity of the stamp
could leave the times unchanged (git's "racy" index entries).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
from pathlib import Path

__all__ = ["ShardCache", "sha256_file"]

_NAME = re.compile(r"^[0-9a-f]{64}\.npz$")
CHUNK = 1024 * 1024
SETTLED_S = 2.0
"""How old a file's ctime must be before its checked identity is remembered."""
TOUCH_EVERY_S = 60.0
"""A use moves a file's mtime (its place in the eviction order) at most this often."""

_Stamp = tuple[int, int, int, int]


def _stamp(st: os.stat_result) -> _Stamp:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


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
    settled_s
        :data:`SETTLED_S` (tests set 0).
    """

    def __init__(
        self, directory: Path, max_files: int = 8, *, settled_s: float = SETTLED_S
    ) -> None:
        if max_files < 1:
            raise ValueError("max_files must be at least 1")
        self.directory = directory
        self.max_files = max_files
        self.settled_s = settled_s
        self.hits = 0
        self.hashed = 0
        """Files hashed to check them (the rest were known unchanged)."""
        self._checked: dict[str, _Stamp] = {}

    def path(self, sha256: str) -> Path:
        """Where the shard with this sha256 is (or would be) kept."""
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise ValueError("not a sha256 hex digest")
        return self.directory / f"{sha256}.npz"

    def get(self, sha256: str, size: int) -> Path | None:
        """The cached file, if it is there with this size and sha256 (else it is dropped).

        Hashed again unless this process checked it and it has not changed since."""
        path = self.path(sha256)
        try:
            st = path.stat()
            stamp = _stamp(st)
            known = self._checked.pop(sha256, None) == stamp
            if st.st_size != size or not (known or self._hash(path) == sha256):
                path.unlink()
                return None
            if known or time.time_ns() - st.st_ctime_ns >= self.settled_s * 1e9:
                self._checked[sha256] = stamp
            if time.time() - st.st_mtime >= TOUCH_EVERY_S:
                os.utime(path)  # its place in the eviction order (checked again next time)
        except FileNotFoundError:
            self._checked.pop(sha256, None)
            return None
        self.hits += 1
        return path

    def _hash(self, path: Path) -> str:
        self.hashed += 1
        return sha256_file(path)

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
            self._checked.pop(path.stem, None)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        return dropped
