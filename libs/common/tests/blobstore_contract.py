"""What every blob store answers, written once: :class:`BlobStoreContract`.

A backend's test module subclasses it and gives two fixtures: ``store``, an open store,
and ``prefix``, a key prefix of the test's own (the bucket may be shared). It runs on
:class:`MemoryBlobStore` (``test_memory_blobs.py``) and on the real store over MinIO
(``tests/stack/test_blobs.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from peertrain.common.blobs import (
    BlobNotFound,
    BlobPort,
    BlobTooLarge,
    InvalidBlobKey,
)

__all__ = ["BlobStoreContract", "Store"]

Store = BlobPort


async def body(data: bytes, chunk: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), chunk):
        yield data[start : start + chunk]


class BlobStoreContract:
    """The blob store's behaviour; subclasses provide ``store`` and ``prefix``."""

    async def test_bytes_go_in_and_come_out_whole_in_chunks_and_to_a_file(
        self, store: Store, prefix: str, tmp_path: Path
    ) -> None:
        key, data = f"{prefix}a/obj.bin", bytes(range(256)) * 40 + b"tail"
        put = await store.put_bytes(key, data, "application/octet-stream")
        sha = hashlib.sha256(data).hexdigest()
        assert (put.key, put.size, put.sha256) == (key, len(data), sha)
        assert await store.exists(key) and await store.get_bytes(key) == data
        chunks = [c async for c in store.get_stream(key, chunk_size=1000)]
        assert b"".join(chunks) == data and max(len(c) for c in chunks) <= 1000
        assert await store.get_sha256(key) == sha
        digest = await store.download_to(key, tmp_path / "obj.bin")
        assert (digest.size, digest.sha256) == (len(data), sha)
        assert (tmp_path / "obj.bin").read_bytes() == data
        assert [p.name for p in tmp_path.iterdir()] == ["obj.bin"]  # no partial file left

    async def test_an_empty_object_is_an_object(self, store: Store, prefix: str) -> None:
        key = f"{prefix}empty"
        put = await store.put_bytes(key, b"")
        assert put.size == 0 and await store.exists(key)
        assert await store.get_bytes(key) == b""
        assert [c async for c in store.get_stream(key)] == []
        assert await store.get_sha256(key) == hashlib.sha256(b"").hexdigest()

    async def test_a_put_replaces_what_was_there(self, store: Store, prefix: str) -> None:
        key = f"{prefix}again"
        await store.put_bytes(key, b"first")
        await store.put_bytes(key, b"second")
        assert await store.get_bytes(key) == b"second"

    async def test_put_stream_stores_what_the_chunks_give(self, store: Store, prefix: str) -> None:
        key, data = f"{prefix}streamed.csv", b"x,y\n" * 5000
        put = await store.put_stream(key, body(data, 777), content_type="text/csv")
        assert (put.size, put.sha256) == (len(data), hashlib.sha256(data).hexdigest())
        assert await store.get_bytes(key) == data

    async def test_a_body_over_the_limit_is_refused_and_stores_nothing(
        self, store: Store, prefix: str
    ) -> None:
        key, read = f"{prefix}big", []

        async def counting() -> AsyncIterator[bytes]:
            for _ in range(100):
                read.append(1)
                yield b"z" * 1000

        with pytest.raises(BlobTooLarge) as info:
            await store.put_stream(key, counting(), max_bytes=5000)
        assert info.value.max_bytes == 5000 and info.value.key == key
        assert not await store.exists(key) and len(read) < 100  # stopped reading
        at_limit = await store.put_stream(key, body(b"z" * 5000, 1000), max_bytes=5000)
        assert at_limit.size == 5000

    async def test_a_missing_key_is_blob_not_found_everywhere(
        self, store: Store, prefix: str, tmp_path: Path
    ) -> None:
        key = f"{prefix}missing"
        assert not await store.exists(key)
        with pytest.raises(BlobNotFound) as info:
            await store.get_bytes(key)
        assert info.value.key == key and isinstance(info.value, LookupError)
        with pytest.raises(BlobNotFound):
            [c async for c in store.get_stream(key)]
        with pytest.raises(BlobNotFound):
            await store.get_sha256(key)
        with pytest.raises(BlobNotFound):
            await store.download_to(key, tmp_path / "missing")
        assert list(tmp_path.iterdir()) == []
        await store.delete(key)  # deleting nothing is fine

    async def test_keys_the_store_cannot_name_are_refused(self, store: Store, prefix: str) -> None:
        for key in ("", "/abs", "k" * 1025):
            with pytest.raises(InvalidBlobKey):
                await store.put_bytes(key, b"x")
            with pytest.raises(InvalidBlobKey):
                await store.get_bytes(key)
        with pytest.raises(InvalidBlobKey):
            await store.delete_prefix("")  # it would empty the bucket
        with pytest.raises(ValueError):
            [c async for c in store.get_stream(f"{prefix}any", chunk_size=0)]

    async def test_list_in_key_order_and_delete_a_prefix(self, store: Store, prefix: str) -> None:
        for name in ("b/2", "a/1", "b/1", "bb"):
            await store.put_bytes(f"{prefix}{name}", name.encode())
        listed = await store.list(f"{prefix}b")
        assert [i.key for i in listed] == [f"{prefix}{n}" for n in ("b/1", "b/2", "bb")]
        assert [i.size for i in listed] == [3, 3, 2]
        assert all(i.last_modified.tzinfo is not None for i in listed)
        assert listed[0].etag == hashlib.md5(b"b/1").hexdigest()  # one part: its MD5
        assert [i.key async for i in store.iter_objects(f"{prefix}b/")] == [
            f"{prefix}b/1",
            f"{prefix}b/2",
        ]
        assert await store.list(f"{prefix}nothing/") == []
        assert await store.delete_prefix(f"{prefix}b/") == 2
        assert [i.key for i in await store.list(prefix)] == [f"{prefix}a/1", f"{prefix}bb"]
        await store.delete(f"{prefix}bb")
        assert [i.key for i in await store.list(prefix)] == [f"{prefix}a/1"]

    async def test_a_copy_has_the_same_bytes_and_a_missing_source_is_not_found(
        self, store: Store, prefix: str
    ) -> None:
        await store.put_bytes(f"{prefix}src", b"payload")
        await store.copy(f"{prefix}src", f"{prefix}dst")
        assert await store.get_bytes(f"{prefix}dst") == b"payload"
        assert await store.get_bytes(f"{prefix}src") == b"payload"
        with pytest.raises(BlobNotFound):
            await store.copy(f"{prefix}gone", f"{prefix}other")
        assert not await store.exists(f"{prefix}other")

    async def test_presigning_checks_its_bounds(self, store: Store, prefix: str) -> None:
        key = f"{prefix}signed"
        assert await store.presigned_get(key, expires_s=60)  # no object needed
        form = await store.presigned_post(key, max_bytes=100, expires_s=60)
        assert form["url"] and form["fields"]["key"] == key
        for expires_s in (0, 7 * 24 * 3600 + 1):
            with pytest.raises(ValueError):
                await store.presigned_get(key, expires_s=expires_s)
            with pytest.raises(ValueError):
                await store.presigned_post(key, max_bytes=100, expires_s=expires_s)
        with pytest.raises(ValueError):
            await store.presigned_post(key, max_bytes=10, min_bytes=11)
        with pytest.raises(InvalidBlobKey):
            await store.presigned_get("")

    async def test_the_bucket_answers(self, store: Store) -> None:
        await store.ensure_bucket()  # idempotent
        await store.check()
