"""In-memory adapters of the event log and the blob store, for one process.

:class:`MemoryEventLog` answers what :class:`peertrain.common.eventlog.EventLog` answers
(append with an expected version, stream and log reads, append listeners) and
:class:`MemoryBlobStore` what :class:`peertrain.common.blobs.BlobStore` answers for
reading and writing objects, so the services' own use cases run on them unchanged: the
simulation wires them in, and unit tests anywhere may use them too.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable, Sequence
from datetime import UTC, datetime

from peertrain.common.blobs import BlobDigest, BlobInfo, BlobNotFound, PresignedPost, PutResult
from peertrain.common.eventlog import ConcurrencyError
from peertrain.common.events import NewEvent, RecordedEvent

__all__ = ["MemoryBlobStore", "MemoryEventLog"]

AppendListener = Callable[[list[RecordedEvent]], None]


class MemoryEventLog:
    """The event log, in memory: streams with optimistic concurrency, global positions.

    Appending at a taken position raises :class:`ConcurrencyError`; appending events
    already stored (same ids) answers them as first stored, as the real log does.
    Listeners registered with :meth:`on_append` get every append's events at once.
    """

    def __init__(self) -> None:
        self.streams: dict[str, list[RecordedEvent]] = {}
        self.events: list[RecordedEvent] = []
        self._by_id: dict[str, RecordedEvent] = {}
        self._listeners: list[AppendListener] = []

    def on_append(self, listener: AppendListener) -> Callable[[], None]:
        """Call ``listener`` with the events of every append; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    async def append(
        self, stream: str, events: Sequence[NewEvent], *, expected_version: int
    ) -> list[RecordedEvent]:
        """Append ``events`` to ``stream`` right after ``expected_version``.

        Raises
        ------
        ConcurrencyError
            If the stream is not at ``expected_version``.
        """
        if not events:
            return []
        if expected_version < 0:
            raise ValueError("expected_version must be >= 0")
        if all(e.id in self._by_id for e in events):
            return [self._by_id[e.id] for e in events]  # a retried append
        taken = self.streams.setdefault(stream, [])
        if len(taken) != expected_version:
            raise ConcurrencyError(stream, expected_version)
        recorded = []
        for e in events:
            r = e.stored_as(stream, len(taken) + 1, len(self.events) + 1)
            taken.append(r)
            self.events.append(r)
            self._by_id[r.id] = r
            recorded.append(r)
        for listener in list(self._listeners):
            listener(recorded)
        return recorded

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        """All events of ``stream`` with ``seq`` > ``after_seq``, in order."""
        return self.streams.get(stream, [])[after_seq:]

    async def stream_version(self, stream: str) -> int:
        """The ``seq`` of the last event of ``stream`` (0 if it has none)."""
        return len(self.streams.get(stream, ()))

    async def read_all(
        self, *, after_position: int = 0, types: Sequence[str] | None = None
    ) -> AsyncIterator[RecordedEvent]:
        """Every event after ``after_position`` in position order (optionally of ``types``)."""
        wanted = None if types is None else set(types)
        for event in self.events[after_position:]:
            if wanted is None or event.type in wanted:
                yield event

    async def find_by_correlation(self, correlation_id: str) -> list[RecordedEvent]:
        """Every event that belongs to one job or request, in position order."""
        return [e for e in self.events if e.correlation_id == correlation_id]

    async def count_unpublished(self, *, producer: str | None = None) -> int:
        """Nothing waits for a broker here."""
        return 0


class MemoryBlobStore:
    """The bucket, in memory: objects by key, with the store's typed errors.

    Presigned URLs name ``memory://`` locations (there is no HTTP side): in one process,
    whoever would follow them reads the store directly.
    """

    def __init__(self, bucket: str = "peertrain") -> None:
        self.bucket = bucket
        self.objects: dict[str, bytes] = {}

    async def put_bytes(self, key: str, data: bytes, content_type: str | None = None) -> PutResult:
        """Store ``data`` at ``key`` (replacing what was there)."""
        self.objects[key] = bytes(data)
        return PutResult(key=key, size=len(data), sha256=hashlib.sha256(data).hexdigest())

    async def put_stream(
        self, key: str, chunks: AsyncIterable[bytes], content_type: str | None = None
    ) -> PutResult:
        """Store what ``chunks`` yields at ``key``."""
        parts = [chunk async for chunk in chunks]
        return await self.put_bytes(key, b"".join(parts), content_type)

    def _get(self, key: str) -> bytes:
        try:
            return self.objects[key]
        except KeyError:
            raise BlobNotFound(f"no object at {key}") from None

    async def get_bytes(self, key: str) -> bytes:
        """The object's bytes.

        Raises
        ------
        BlobNotFound
            No object at ``key``.
        """
        return self._get(key)

    async def get_stream(self, key: str, chunk_size: int = 1024 * 1024) -> AsyncGenerator[bytes]:
        """The object in chunks (``BlobNotFound`` at the first one if there is none)."""
        data = self._get(key)
        for start in range(0, max(1, len(data)), chunk_size):
            yield data[start : start + chunk_size]

    async def get_sha256(self, key: str) -> str:
        """The object's SHA-256 (lowercase hex)."""
        return hashlib.sha256(self._get(key)).hexdigest()

    async def exists(self, key: str) -> bool:
        """Whether there is an object at ``key``."""
        return key in self.objects

    async def delete(self, key: str) -> None:
        """Remove the object at ``key`` (none there is fine)."""
        self.objects.pop(key, None)

    async def delete_prefix(self, prefix: str) -> int:
        """Remove every object under ``prefix``; how many."""
        keys = [k for k in self.objects if k.startswith(prefix)]
        for k in keys:
            del self.objects[k]
        return len(keys)

    async def list(self, prefix: str = "") -> builtins.list[BlobInfo]:
        """The objects under ``prefix``, by key."""
        now = datetime.now(UTC)
        return [
            BlobInfo(key=k, size=len(v), etag=hashlib.md5(v).hexdigest(), last_modified=now)  # noqa: S324
            for k, v in sorted(self.objects.items())
            if k.startswith(prefix)
        ]

    async def digest(self, key: str) -> BlobDigest:
        """Size and SHA-256 of the object."""
        data = self._get(key)
        return BlobDigest(len(data), hashlib.sha256(data).hexdigest())

    async def presigned_get(self, key: str, *, expires_s: int = 3600) -> str:
        """A ``memory://`` URL naming the object."""
        return f"memory://{self.bucket}/{key}"

    async def presigned_post(
        self, key: str, *, max_bytes: int, expires_s: int = 3600
    ) -> PresignedPost:
        """A form naming where an upload goes (``memory://``)."""
        return {"url": f"memory://{self.bucket}", "fields": {"key": key}}
