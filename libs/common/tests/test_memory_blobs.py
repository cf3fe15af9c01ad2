"""The in-memory blob store answers what the real one answers (the contract suite)."""

from __future__ import annotations

import pytest
from blobstore_contract import BlobStoreContract

from peertrain.common.blobs import MemoryBlobStore


class TestMemoryBlobStore(BlobStoreContract):
    @pytest.fixture
    def store(self) -> MemoryBlobStore:
        return MemoryBlobStore()

    @pytest.fixture
    def prefix(self) -> str:
        return "test/"


async def test_presigned_urls_name_memory_locations_and_objects_are_plain_bytes() -> None:
    blobs = MemoryBlobStore(bucket="b")
    await blobs.put_bytes("k/1", b"one")
    assert blobs.objects == {"k/1": b"one"}
    assert await blobs.presigned_get("k/1") == "memory://b/k/1"
    form = await blobs.presigned_post("k/2", max_bytes=10, content_type="text/csv")
    assert form == {"url": "memory://b", "fields": {"key": "k/2", "Content-Type": "text/csv"}}
