"""Unit tests of the blob store's pure parts, with a recording fake S3 client.

The real behaviour (MinIO) is proven in ``tests/stack/test_blobs.py``; these pin the
part slicing and the abort-on-error contract without a network.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from pydantic import ValidationError

import peertrain.common.blobs as blobs_pkg
from peertrain.common.blobs import (
    MIN_PART_SIZE,
    BlobError,
    BlobNotFound,
    BlobStore,
    BlobStoreConfig,
    BlobStoreUnavailable,
    BlobTooLarge,
    InvalidBlobKey,
)
from peertrain.common.blobs.errors import translated
from peertrain.common.blobs.upload import stream_upload
from peertrain.common.errors import NotFound, PeerTrainError

PART = MIN_PART_SIZE


class FakeS3:
    """Records calls; optionally fails the n-th ``upload_part``."""

    def __init__(self, *, fail_part: int | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.parts: list[int] = []
        self.fail_part = fail_part

    async def put_object(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("put_object", {**kw, "Body": len(kw["Body"])}))
        return {}

    async def create_multipart_upload(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("create_multipart_upload", kw))
        return {"UploadId": "u1"}

    async def upload_part(self, **kw: Any) -> dict[str, Any]:
        if kw["PartNumber"] == self.fail_part:
            raise ConnectionResetError("network went away")
        self.parts.append(len(kw["Body"]))
        self.calls.append(("upload_part", {**kw, "Body": len(kw["Body"])}))
        return {"ETag": f'"etag-{kw["PartNumber"]}"'}

    async def complete_multipart_upload(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("complete_multipart_upload", kw))
        return {}

    async def abort_multipart_upload(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("abort_multipart_upload", kw))
        return {}

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


async def body(size: int, chunk: int, consumed: list[int] | None = None) -> AsyncIterator[bytes]:
    for start in range(0, size, chunk):
        n = min(chunk, size - start)
        if consumed is not None:
            consumed.append(n)
        yield bytes([start % 251]) * n


def expected_sha(size: int, chunk: int) -> str:
    digest = hashlib.sha256()
    for start in range(0, size, chunk):
        digest.update(bytes([start % 251]) * min(chunk, size - start))
    return digest.hexdigest()


@pytest.mark.parametrize("size", [0, 1, PART - 1, PART])
async def test_up_to_one_part_is_a_single_put(size: int) -> None:
    s3 = FakeS3()
    result = await stream_upload(s3, "b", "k", body(size, 1000 * 1000), part_size=PART)
    assert s3.names() == ["put_object"]
    assert s3.calls[0][1]["Body"] == size
    assert (result.size, result.sha256) == (size, expected_sha(size, 1000 * 1000))


@pytest.mark.parametrize(
    ("size", "chunk"), [(PART + 1, 7 * 1024 * 1024), (3 * PART, 123_457), (2 * PART + 5, PART * 3)]
)
async def test_larger_bodies_are_cut_into_full_parts_and_a_tail(size: int, chunk: int) -> None:
    s3 = FakeS3()
    result = await stream_upload(
        s3, "b", "k", body(size, chunk), part_size=PART, content_type="text/csv"
    )
    full, tail = divmod(size, PART)
    if tail == 0:
        full, tail = full - 1, PART
    assert s3.parts == [PART] * full + [tail]
    assert s3.names()[0] == "create_multipart_upload"
    assert s3.calls[0][1]["ContentType"] == "text/csv"
    assert s3.names()[-1] == "complete_multipart_upload"
    sent = s3.calls[-1][1]["MultipartUpload"]["Parts"]
    assert [p["PartNumber"] for p in sent] == list(range(1, full + 2))
    assert (result.size, result.sha256) == (size, expected_sha(size, chunk))


async def test_too_large_aborts_and_stops_reading() -> None:
    s3 = FakeS3()
    consumed: list[int] = []
    with pytest.raises(BlobTooLarge):
        await stream_upload(
            s3,
            "b",
            "k",
            body(100 * PART, 1024 * 1024, consumed),
            part_size=PART,
            max_bytes=3 * PART,
        )
    assert sum(consumed) == 3 * PART + 1024 * 1024
    assert s3.names()[-1] == "abort_multipart_upload"
    assert "complete_multipart_upload" not in s3.names()


async def test_too_large_before_any_part_sends_nothing() -> None:
    s3 = FakeS3()
    with pytest.raises(BlobTooLarge):
        await stream_upload(s3, "b", "k", body(PART, 1000), part_size=PART, max_bytes=10)
    assert s3.calls == []


async def test_failed_part_aborts_the_upload() -> None:
    s3 = FakeS3(fail_part=2)
    with pytest.raises(ConnectionResetError):
        await stream_upload(s3, "b", "k", body(4 * PART, 1024 * 1024), part_size=PART)
    assert s3.names() == ["create_multipart_upload", "upload_part", "abort_multipart_upload"]


async def test_cancellation_aborts_the_upload() -> None:
    s3 = FakeS3()
    started = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield b"x" * (PART + 1)
        started.set()
        await asyncio.sleep(3600)
        yield b"never"

    task = asyncio.create_task(stream_upload(s3, "b", "k", slow_body(), part_size=PART))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert s3.names()[-1] == "abort_multipart_upload"


def test_errors_mix_in_builtins_under_one_root() -> None:
    assert issubclass(BlobError, PeerTrainError)
    assert issubclass(BlobNotFound, LookupError) and issubclass(BlobNotFound, NotFound)
    assert issubclass(BlobTooLarge, ValueError)
    assert issubclass(InvalidBlobKey, ValueError)
    assert issubclass(BlobStoreUnavailable, ConnectionError)
    assert BlobNotFound("a/b").detail == {"key": "a/b"}
    assert BlobTooLarge("k", 5).status_code == 413


def test_config_refuses_parts_below_the_s3_minimum() -> None:
    with pytest.raises(ValidationError):
        BlobStoreConfig(part_size=MIN_PART_SIZE - 1)
    assert BlobStoreConfig(secret_key="s").secret_key.get_secret_value() == "s"


async def test_store_must_be_opened_and_keys_are_checked() -> None:
    store = BlobStore(BlobStoreConfig())
    with pytest.raises(RuntimeError, match="not open"):
        await store.exists("a")
    with pytest.raises(InvalidBlobKey):
        await store.delete_prefix("")
    with pytest.raises(InvalidBlobKey):
        await store.put_bytes("/leading-slash", b"")


async def test_presigning_needs_no_server() -> None:
    config = BlobStoreConfig(
        endpoint_url="http://127.0.0.1:1", presign_endpoint_url="http://files.example:9000"
    )
    async with BlobStore(config) as store:
        url = await store.presigned_get("jobs/j1/config.json", expires_s=60)
        form = await store.presigned_post("jobs/j1/u.safetensors", max_bytes=10)
        with pytest.raises(ValueError):
            await store.presigned_get("k", expires_s=0)
    assert url.startswith("http://files.example:9000/peertrain/jobs/j1/config.json?")
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in url and "X-Amz-Expires=60" in url
    assert form["url"] == "http://files.example:9000/peertrain"
    assert form["fields"]["key"] == "jobs/j1/u.safetensors"


def test_public_surface_is_declared() -> None:
    for name in blobs_pkg.__all__:
        assert hasattr(blobs_pkg, name), name
    public = {n for n in dir(blobs_pkg) if not n.startswith("_")}
    modules = {
        "client",
        "config",
        "download",
        "errors",
        "memory",
        "models",
        "presign",
        "store",
        "upload",
    }
    assert public - modules == set(blobs_pkg.__all__)


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, "GetObject")


def test_botocore_errors_are_translated() -> None:
    with pytest.raises(BlobNotFound), translated("k"):
        raise _client_error("NoSuchKey")
    with pytest.raises(BlobNotFound), translated("k"):
        raise _client_error("404")  # HEAD has no body, only the status
    with pytest.raises(BlobError) as caught, translated("k"):
        raise _client_error("AccessDenied")
    assert not isinstance(caught.value, BlobNotFound)
    assert caught.value.detail == {"s3_code": "AccessDenied", "key": "k"}
    with pytest.raises(BlobError) as caught, translated():  # no key: a 404 is not about a blob
        raise _client_error("NoSuchKey")
    assert not isinstance(caught.value, BlobNotFound)
    with pytest.raises(BlobStoreUnavailable), translated("k"):
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    with pytest.raises(BlobTooLarge), translated("k"):  # ours pass through untouched
        raise BlobTooLarge("k", 1)
