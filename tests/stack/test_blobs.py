"""Blob store against the real MinIO of the local stack (``@pytest.mark.stack``)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
import pytest

from peertrain.common.blobs import (
    BlobStore,
    BlobStoreConfig,
    BlobStoreUnavailable,
    BlobTooLarge,
)
from peertrain.common.settings import ServiceSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "libs" / "common" / "tests"))

from blobstore_contract import BlobStoreContract

pytestmark = pytest.mark.stack

MiB = 1024 * 1024
PROBE = Path(__file__).with_name("blob_rss_probe.py")
BIG_SIZE = 200 * MiB
RSS_LIMIT_BYTES = 150 * 1000 * 1000  # 150 MB


def _config(settings: ServiceSettings) -> BlobStoreConfig:
    return BlobStoreConfig(
        endpoint_url=settings.s3_endpoint_url,
        access_key=settings.s3_access_key,
        secret_key=settings.s3_secret_key,
        region=settings.s3_region,
        bucket=settings.s3_bucket,
    )


async def _pending_uploads(blobs: BlobStore, key: str) -> list[str]:
    """Upload ids still open for ``key``.

    MinIO lists multipart uploads only for an exact object key when a prefix is
    given, so ask for the key itself.
    """
    response = await blobs.client.list_multipart_uploads(Bucket=blobs.bucket, Prefix=key)
    return [u["UploadId"] for u in response.get("Uploads", []) if u["Key"] == key]


async def _counting_body(
    total: int, chunk: int, consumed: list[int], *, fail_after: int | None = None
) -> AsyncIterator[bytes]:
    sent = 0
    while sent < total:
        if fail_after is not None and sent >= fail_after:
            raise RuntimeError("source broke mid-stream")
        n = min(chunk, total - sent)
        consumed.append(n)
        sent += n
        yield bytes([len(consumed) % 256]) * n


@pytest.fixture(scope="module")
async def blobs(settings: ServiceSettings) -> AsyncIterator[BlobStore]:
    async with BlobStore(_config(settings)) as store:
        await store.ensure_bucket()
        await store.check()
        yield store


@pytest.fixture
async def blob_prefix(blobs: BlobStore, run_id: str) -> AsyncIterator[str]:
    """A key prefix of this test's own, emptied afterwards."""
    value = f"test/blobs/{run_id}/{uuid.uuid4().hex[:12]}/"
    yield value
    await blobs.delete_prefix(value)


class TestBlobStoreContract(BlobStoreContract):
    """What every blob store answers (the in-memory one too), on MinIO."""

    @pytest.fixture
    def store(self, blobs: BlobStore) -> BlobStore:
        return blobs

    @pytest.fixture
    def prefix(self, blob_prefix: str) -> str:
        return blob_prefix


# -- streaming ------------------------------------------------------------------


def test_200mb_streamed_up_and_down_in_bounded_memory(
    settings: ServiceSettings, tmp_path: Path
) -> None:
    """A fresh interpreter streams 200 MiB up and down; its peak RSS is what counts."""
    key = f"test/blobs/{uuid.uuid4().hex}/big.bin"
    try:
        run = subprocess.run(
            [sys.executable, str(PROBE), key, str(BIG_SIZE), str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    finally:
        asyncio.run(_delete(_config(settings), key))
    print(f"\nblob probe: {json.dumps(result)}")
    expected = result["expected_sha256"]
    assert result["put_size"] == result["stream_size"] == result["download_size"] == BIG_SIZE
    assert result["file_size"] == BIG_SIZE
    assert result["listed_sizes"] == [BIG_SIZE]
    assert result["put_sha256"] == expected
    assert result["stream_sha256"] == expected
    assert result["download_sha256"] == expected
    assert result["peak_rss_bytes"] < RSS_LIMIT_BYTES


async def _delete(config: BlobStoreConfig, key: str) -> None:
    async with BlobStore(config) as store:
        await store.delete(key)


@pytest.mark.parametrize(
    ("size", "multipart"),
    [(0, False), (1, False), (8 * MiB, False), (8 * MiB + 1, True), (21 * MiB + 3, True)],
)
async def test_put_stream_single_or_multipart(
    blobs: BlobStore, blob_prefix: str, size: int, multipart: bool
) -> None:
    key = f"{blob_prefix}obj-{size}"
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)

    async def body() -> AsyncIterator[bytes]:
        for start in range(0, size, 3 * MiB + 5):
            yield data[start : start + 3 * MiB + 5]

    result = await blobs.put_stream(key, body(), content_type="text/csv")
    assert (result.key, result.size) == (key, size)
    assert result.sha256 == hashlib.sha256(data).hexdigest()
    head = await blobs.client.head_object(Bucket=blobs.bucket, Key=key)
    assert head["ContentType"] == "text/csv"
    # A multipart object's ETag is "<md5 of part md5s>-<part count>".
    assert ("-" in head["ETag"]) is multipart
    assert await blobs.get_bytes(key) == data
    assert await blobs.get_sha256(key) == result.sha256


async def test_blob_too_large_leaves_nothing_behind(blobs: BlobStore, blob_prefix: str) -> None:
    key = f"{blob_prefix}too-large.bin"
    consumed: list[int] = []
    limit = 20 * MiB  # past the first part, so a multipart upload is open when it trips
    with pytest.raises(BlobTooLarge) as caught:
        await blobs.put_stream(key, _counting_body(200 * MiB, MiB, consumed), max_bytes=limit)
    assert caught.value.max_bytes == limit
    assert isinstance(caught.value, ValueError)
    assert sum(consumed) == limit + MiB  # stopped at the chunk that crossed the limit
    assert not await blobs.exists(key)
    assert await _pending_uploads(blobs, key) == []


async def test_pending_upload_check_is_not_vacuous(blobs: BlobStore, blob_prefix: str) -> None:
    """The listing used above does see an open multipart upload."""
    key = f"{blob_prefix}open.bin"
    upload = await blobs.client.create_multipart_upload(Bucket=blobs.bucket, Key=key)
    try:
        assert await _pending_uploads(blobs, key) == [upload["UploadId"]]
    finally:
        await blobs.client.abort_multipart_upload(
            Bucket=blobs.bucket, Key=key, UploadId=upload["UploadId"]
        )
    assert await _pending_uploads(blobs, key) == []


async def test_failing_source_aborts_the_multipart_upload(
    blobs: BlobStore, blob_prefix: str
) -> None:
    key = f"{blob_prefix}broken.bin"
    consumed: list[int] = []
    body = _counting_body(100 * MiB, MiB, consumed, fail_after=30 * MiB)
    with pytest.raises(RuntimeError, match="source broke"):
        await blobs.put_stream(key, body)
    assert not await blobs.exists(key)
    assert await _pending_uploads(blobs, key) == []


async def test_small_body_over_limit_is_refused(blobs: BlobStore, blob_prefix: str) -> None:
    key = f"{blob_prefix}small-too-large.bin"
    with pytest.raises(BlobTooLarge):
        await blobs.put_stream(key, _counting_body(3 * MiB, MiB, []), max_bytes=2 * MiB)
    assert not await blobs.exists(key)


# -- reading, listing, deleting ---------------------------------------------------


async def test_list_and_delete_prefix_page_by_page(
    blobs: BlobStore, blob_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blobs, "_list_page_size", 2)  # several pages for five keys
    keys = [f"{blob_prefix}dir/{i:02d}" for i in range(5)] + [f"{blob_prefix}other"]
    for i, key in enumerate(keys):
        await blobs.put_bytes(key, b"x" * i)
    listed = await blobs.list(f"{blob_prefix}dir/")
    assert [info.key for info in listed] == keys[:5]
    assert [info.size for info in listed] == [0, 1, 2, 3, 4]
    assert all(info.last_modified.tzinfo is not None for info in listed)
    assert await blobs.delete_prefix(f"{blob_prefix}dir/") == 5
    assert [info.key for info in await blobs.list(blob_prefix)] == [f"{blob_prefix}other"]
    await blobs.delete(f"{blob_prefix}other")
    assert await blobs.list(blob_prefix) == []


async def test_stream_stopped_early_releases_the_connection(
    blobs: BlobStore, blob_prefix: str
) -> None:
    key = f"{blob_prefix}partial-read.bin"
    await blobs.put_stream(key, _counting_body(12 * MiB, MiB, []))
    for _ in range(3 * blobs.config.max_pool_connections):
        async with aclosing(blobs.get_stream(key, chunk_size=64 * 1024)) as chunks:
            async for chunk in chunks:
                assert chunk
                break
    assert await blobs.exists(key)  # the pool is not exhausted


# -- presigned URLs ---------------------------------------------------------------


async def test_presigned_get_works_from_plain_httpx(blobs: BlobStore, blob_prefix: str) -> None:
    key = f"{blob_prefix}shard-0.csv"
    await blobs.put_bytes(key, b"a,b\n1,2\n", content_type="text/csv")
    url = await blobs.presigned_get(key)
    async with httpx.AsyncClient() as http:
        response = await http.get(url)
    assert response.status_code == 200
    assert response.content == b"a,b\n1,2\n"


async def test_expired_presigned_get_is_refused(blobs: BlobStore, blob_prefix: str) -> None:
    key = f"{blob_prefix}expiring"
    await blobs.put_bytes(key, b"secret")
    url = await blobs.presigned_get(key, expires_s=1)
    await asyncio.sleep(2.1)
    async with httpx.AsyncClient() as http:
        response = await http.get(url)
    assert response.status_code == 403
    assert b"secret" not in response.content
    assert b"AccessDenied" in response.content


def _with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.update(changes)
    return urlunsplit(parts._replace(query=urlencode(query)))


async def test_tampered_presigned_get_is_refused(blobs: BlobStore, blob_prefix: str) -> None:
    key, other = f"{blob_prefix}mine", f"{blob_prefix}theirs"
    mine, theirs = b"payload-of-mine-1f2e", b"payload-of-theirs-3d4c"
    await blobs.put_bytes(key, mine)
    await blobs.put_bytes(other, theirs)
    url = await blobs.presigned_get(key)
    signature = dict(parse_qsl(urlsplit(url).query))["X-Amz-Signature"]
    flipped = signature[:-1] + ("0" if signature[-1] != "0" else "1")
    tampered = {
        "signature": _with_query(url, **{"X-Amz-Signature": flipped}),
        "key": url.replace("/mine?", "/theirs?"),
        "expiry": _with_query(url, **{"X-Amz-Expires": "604800"}),
    }
    assert tampered["key"] != url
    async with httpx.AsyncClient() as http:
        untouched = await http.get(url)
        assert (untouched.status_code, untouched.content) == (200, mine)
        for what, bad in tampered.items():
            response = await http.get(bad)
            assert response.status_code == 403, what
            assert b"SignatureDoesNotMatch" in response.content, what
            assert mine not in response.content and theirs not in response.content


async def test_presigned_post_enforces_the_size_limit(blobs: BlobStore, blob_prefix: str) -> None:
    key = f"{blob_prefix}rounds/1/updates/peer-a.safetensors"
    form = await blobs.presigned_post(key, max_bytes=1024)
    assert set(form) == {"url", "fields"}
    async with httpx.AsyncClient() as http:
        over = await http.post(form["url"], data=form["fields"], files={"file": b"x" * 1025})
        assert over.status_code == 400
        assert b"EntityTooLarge" in over.content
        assert not await blobs.exists(key)

        under = await http.post(form["url"], data=form["fields"], files={"file": b"y" * 1000})
        assert under.status_code in (200, 201, 204), under.text
    assert await blobs.get_bytes(key) == b"y" * 1000


async def test_expired_presigned_post_is_refused(blobs: BlobStore, blob_prefix: str) -> None:
    key = f"{blob_prefix}rounds/1/updates/late-peer.safetensors"
    form = await blobs.presigned_post(key, max_bytes=1024, expires_s=1)
    await asyncio.sleep(2.1)
    async with httpx.AsyncClient() as http:
        response = await http.post(form["url"], data=form["fields"], files={"file": b"late"})
    assert response.status_code == 403
    assert not await blobs.exists(key)


async def test_presigned_post_is_bound_to_its_key(blobs: BlobStore, blob_prefix: str) -> None:
    key = f"{blob_prefix}rounds/1/updates/peer-a.safetensors"
    form = await blobs.presigned_post(key, max_bytes=1024)
    fields = dict(form["fields"], key=f"{blob_prefix}rounds/1/updates/peer-b.safetensors")
    async with httpx.AsyncClient() as http:
        response = await http.post(form["url"], data=fields, files={"file": b"z"})
    assert response.status_code == 403
    assert await blobs.list(blob_prefix) == []


# -- readiness --------------------------------------------------------------------


async def test_check_raises_when_the_store_does_not_answer(settings: ServiceSettings) -> None:
    dead = _config(settings).model_copy(
        update={"endpoint_url": "http://127.0.0.1:1", "max_attempts": 1, "connect_timeout_s": 1}
    )
    async with BlobStore(dead) as store:
        with pytest.raises(BlobStoreUnavailable) as caught:
            await store.check()
    assert isinstance(caught.value, ConnectionError)


async def test_operations_on_a_dead_endpoint_raise_unavailable(settings: ServiceSettings) -> None:
    dead = _config(settings).model_copy(
        update={"endpoint_url": "http://127.0.0.1:1", "max_attempts": 1, "connect_timeout_s": 1}
    )
    async with BlobStore(dead) as store:
        with pytest.raises(BlobStoreUnavailable):
            await store.get_bytes("any/key")
        with pytest.raises(BlobStoreUnavailable):
            await store.put_bytes("any/key", b"x")
        with pytest.raises(BlobStoreUnavailable):
            await store.list("any/")
        # Presigning makes no request, so it works without the store.
        assert (await store.presigned_get("any/key")).startswith("http://127.0.0.1:1/")


async def test_check_raises_when_the_bucket_is_missing(settings: ServiceSettings) -> None:
    missing = _config(settings).model_copy(update={"bucket": f"missing-{uuid.uuid4().hex[:12]}"})
    async with BlobStore(missing) as store:
        with pytest.raises(BlobStoreUnavailable):
            await store.check()
