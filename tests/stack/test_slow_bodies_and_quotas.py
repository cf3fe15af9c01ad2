"""Slow bodies and per-user quotas on the real stack (issue 12, hole 11).

The dataset service runs with a short body deadline (``REQUEST_BODY_TIMEOUT_S``) and
small quotas, so that a trickle upload is cut off with 408 and a quota breach answers
403 in the one error shape, both through the gateway (:8080) and directly (:8003), and
neither leaves anything stored. A probe service behind ``/api/jobs/`` shows that the
gateway lets every other body meet its service's deadline too. No timing is asserted:
only that the 408 comes (long before the body could have been sent at the trickle's
rate) and what is stored after.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from peertrain.common.blobs import BlobStore
from peertrain.dataset.config import DatasetSettings
from peertrain.testkit.auth import AuthUnderTest, shared_auth_service
from peertrain.testkit.common import GATEWAY, PLATFORM_PORTS, ServiceProcess, child_env
from peertrain.testkit.dataset import GATEWAY_URL, DatasetService, running_dataset_service

AUTH_URL = f"{GATEWAY}/api/auth"
DIRECT_URL = f"http://127.0.0.1:{PLATFORM_PORTS['dataset']}/api/datasets"
DEADLINE_S = 3
MAX_DATASETS = 2
MAX_BYTES = 64 * 1024
CSV = b"a,b,label\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,10,x\n11,12,y\n"
BOUNDARY = "peertrain-limits-boundary"
PROBE = Path(__file__).with_name("body_probe_app.py")
ROUTES = pytest.mark.parametrize("base", [GATEWAY_URL, DIRECT_URL], ids=["gateway", "direct"])


@pytest.fixture(scope="module")
def auth(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthUnderTest]:
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as svc:
        yield svc


@pytest.fixture(scope="module")
def service(
    auth: AuthUnderTest, run_id: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DatasetService, str]]:
    with running_dataset_service(
        mongo_db=auth.mongo_db,
        run=f"{run_id}-limits",
        base_dir=tmp_path_factory.getbasetemp(),
        extra={
            "PEERTRAIN_DATASET_REQUEST_BODY_TIMEOUT_S": str(DEADLINE_S),
            "PEERTRAIN_DATASET_MAX_DATASETS_PER_USER": str(MAX_DATASETS),
            "PEERTRAIN_DATASET_MAX_BYTES_PER_USER": str(MAX_BYTES),
        },
    ) as running:
        yield running


@pytest.fixture
async def blobs(service: tuple[DatasetService, str]) -> AsyncIterator[BlobStore]:
    async with BlobStore(DatasetSettings(s3_bucket=service[1]).blob_store_config()) as store:
        yield store


@pytest.fixture
def access(service: tuple[DatasetService, str]) -> str:
    """A new user's access token (each test starts with an empty quota)."""
    name, password = f"q{uuid.uuid4().hex[:12]}", f"pass {uuid.uuid4().hex}"
    with httpx.Client(base_url=AUTH_URL, timeout=60) as http:
        assert http.post("/register", json={"username": name, "password": password}).is_success
        r = http.post("/token", data={"username": name, "password": password})
        return str(r.json()["access_token"])


def client(base: str, access: str) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {access}"}
    return httpx.AsyncClient(base_url=base, headers=headers, timeout=120)


async def stored(blobs: BlobStore) -> tuple[set[str], int]:
    """The datasets with objects in the run's bucket, and the multipart uploads in
    progress (validation of datasets already there adds objects, under their ids)."""
    datasets = {info.key.split("/")[1] for info in await blobs.list("datasets/")}
    uploads = await blobs.client.list_multipart_uploads(Bucket=blobs.bucket)
    return datasets, len(uploads.get("Uploads", []))


def assert_error(status: int, body: dict[str, Any], want: int, code: str) -> dict[str, Any]:
    assert status == want, body
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "detail"}
    assert body["error"]["code"] == code, body
    return dict(body["error"])


async def trickle(
    url: str, headers: dict[str, str], head: bytes, *, declared: int, pause_s: float
) -> tuple[int, bytes]:
    """POST to ``url`` a body that announces ``declared`` bytes and starts with ``head``,
    then goes on one byte every ``pause_s``, reading whatever the server answers
    meanwhile; return the status and body of that answer (the whole body would take
    about ``declared * pause_s`` seconds)."""
    target = httpx.URL(url)
    lines = [f"POST {target.raw_path.decode()} HTTP/1.1", f"Host: {target.host}:{target.port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append(f"Content-Length: {declared}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    reader, writer = await asyncio.open_connection(target.host, target.port)
    answer = bytearray()
    try:
        writer.write(request + head)
        await writer.drain()
        for _ in range(declared - len(head)):
            try:
                chunk = await asyncio.wait_for(reader.read(65536), timeout=pause_s)
            except TimeoutError:
                chunk = None
            if chunk == b"":
                break  # the server closed
            if chunk:
                answer += chunk
                if complete(answer):
                    break
                continue
            try:
                writer.write(b" ")
                await writer.drain()
            except ConnectionError:
                break
        while not complete(answer) and (more := await asyncio.wait_for(reader.read(), 60)):
            answer += more
    finally:
        writer.close()
    assert complete(answer), f"no complete answer: {bytes(answer)!r}"
    status_line, _, rest = bytes(answer).partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def complete(answer: bytes | bytearray) -> bool:
    """Whether ``answer`` holds a whole response (headers and Content-Length bytes)."""
    head, found, body = bytes(answer).partition(b"\r\n\r\n")
    if not found:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


@ROUTES
async def test_a_trickle_upload_is_cut_off_with_408_and_nothing_is_stored(
    base: str, access: str, blobs: BlobStore
) -> None:
    before = await stored(blobs)
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="slow.csv"'
        f"\r\nContent-Type: text/csv\r\n\r\na,b,label\n1,2,x\n"
    ).encode()
    headers = {
        "Authorization": f"Bearer {access}",
        "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
    }
    # 4000 bytes at one per 0.5 s would take over half an hour; the deadline is 3 s.
    status, body = await trickle(f"{base}/", headers, head, declared=4000, pause_s=0.5)
    error = assert_error(status, json.loads(body), 408, "request_timeout")
    assert error["detail"]["timeout_s"] == DEADLINE_S
    assert 0 < error["detail"]["received_bytes"] < 4000
    assert await stored(blobs) == before
    async with client(base, access) as http:
        assert (await http.get("/")).json() == {"items": [], "next_offset": None}


@pytest.fixture
def json_probe(tmp_path: Path) -> Iterator[ServiceProcess]:
    """``body_probe_app.py`` on the orchestrator's port, behind ``/api/jobs/``."""
    env = child_env(None, {"PEERTRAIN_REQUEST_BODY_TIMEOUT_S": str(DEADLINE_S)})
    probe = ServiceProcess(
        name="probe",
        args=[str(PROBE)],
        env=env,
        port=PLATFORM_PORTS["orchestrator"],
        log_path=tmp_path / "probe.log",
        ready_path="/healthz",
    )
    probe.start()
    yield probe
    probe.stop()


async def test_any_services_json_body_through_the_gateway_gets_the_deadline_too(
    json_probe: ServiceProcess,
) -> None:
    """The gateway streams every body through (no buffering that only times out per
    read), so a trickle to any service ends with that service's 408."""
    url = f"{GATEWAY}/api/jobs/echo"
    async with httpx.AsyncClient(timeout=60) as http:
        assert (await http.post(url, json={"a": 1})).json() == {"a": 1}
    head = b'{"a": "'
    status, body = await trickle(
        url, {"Content-Type": "application/json"}, head, declared=2000, pause_s=0.5
    )
    assert_error(status, json.loads(body), 408, "request_timeout")


@ROUTES
async def test_one_dataset_past_the_quota_is_refused_until_one_is_deleted(
    base: str, access: str, blobs: BlobStore
) -> None:
    async with client(base, access) as http:
        ids = []
        for n in range(MAX_DATASETS):
            r = await http.post("/", files={"file": (f"d{n}.csv", CSV)})
            assert r.status_code == 202, r.text
            ids.append(r.json()["dataset_id"])
        before = await stored(blobs)
        r = await http.post("/", files={"file": ("extra.csv", CSV)})
        error = assert_error(r.status_code, r.json(), 403, "quota_exceeded")
        assert error["detail"] == {"quota": "datasets", "limit": MAX_DATASETS, "used": 2}
        assert await stored(blobs) == before
        assert len((await http.get("/")).json()["items"]) == MAX_DATASETS

        assert (await http.delete(f"/{ids[0]}")).status_code == 204
        r = await http.post("/", files={"file": ("extra.csv", CSV)})
        assert r.status_code == 202, r.text


@ROUTES
async def test_bytes_past_the_quota_are_refused_announced_or_streamed(
    base: str, access: str, blobs: BlobStore
) -> None:
    # Past the quota even less the form's allowance (64 KiB) taken off Content-Length.
    big = b"a,b,label\n" + b"1,2,x\n3,4,y\n" * ((2 * MAX_BYTES + 64 * 1024) // 12)
    async with client(base, access) as http:
        before = await stored(blobs)
        # Content-Length announced: refused before the body is read.
        r = await http.post("/", files={"file": ("big.csv", big)})
        error = assert_error(r.status_code, r.json(), 403, "quota_exceeded")
        assert error["detail"]["quota"] == "bytes"
        assert error["detail"]["incoming"] > MAX_BYTES + 1  # the announced size, not a count

        # No Content-Length: refused as the stream passes the room left.
        async def body() -> AsyncIterator[bytes]:
            yield (
                f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="big.csv"\r\nContent-Type: text/csv\r\n\r\n'
            ).encode()
            for start in range(0, len(big), 8192):
                yield big[start : start + 8192]
            yield f"\r\n--{BOUNDARY}--\r\n".encode()

        headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
        r = await http.post("/", content=body(), headers=headers)
        error = assert_error(r.status_code, r.json(), 403, "quota_exceeded")
        assert error["detail"] == {
            "quota": "bytes",
            "limit": MAX_BYTES,
            "used": 0,
            "incoming": MAX_BYTES + 1,
        }
        assert await stored(blobs) == before
        assert (await http.get("/")).json() == {"items": [], "next_offset": None}
