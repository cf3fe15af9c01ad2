"""Every bad input of the dataset API refused, through the gateway, leaving nothing in S3.

Refusals come in two kinds: at upload time a 4xx in the one error shape (nothing was
stored), or after upload a ``rejected`` dataset whose error says why (everything under
``datasets/<id>/`` removed). The service under test has a 16 MiB upload cap.
"""

from __future__ import annotations

import io
import stat
import uuid
import zipfile
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from peertrain.common.blobs import BlobStore
from peertrain.dataset.config import DatasetSettings
from peertrain.testkit.auth import AuthUnderTest, shared_auth_service
from peertrain.testkit.common import GATEWAY
from peertrain.testkit.dataset import GATEWAY_URL, DatasetService, running_dataset_service

AUTH_URL = f"{GATEWAY}/api/auth"
CAP = 16 * 1024 * 1024
CSV = b"a,b,label\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,10,x\n11,12,y\n"
BOUNDARY = "peertrain-test-boundary"


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
        run=f"{run_id}-bad",
        base_dir=tmp_path_factory.getbasetemp(),
        extra={"PEERTRAIN_DATASET_MAX_UPLOAD_BYTES": str(CAP)},
    ) as running:
        yield running


@pytest.fixture
async def blobs(service: tuple[DatasetService, str]) -> AsyncIterator[BlobStore]:
    async with BlobStore(DatasetSettings(s3_bucket=service[1]).blob_store_config()) as store:
        yield store


@pytest.fixture(scope="module")
def access(service: tuple[DatasetService, str]) -> str:
    name, password = f"b{uuid.uuid4().hex[:12]}", f"pass {uuid.uuid4().hex}"
    with httpx.Client(base_url=AUTH_URL, timeout=60) as http:
        assert http.post("/register", json={"username": name, "password": password}).is_success
        r = http.post("/token", data={"username": name, "password": password})
        return str(r.json()["access_token"])


@pytest.fixture
async def http(access: str) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {access}"}
    async with httpx.AsyncClient(base_url=GATEWAY_URL, headers=headers, timeout=120) as client:
        yield client


async def stored(blobs: BlobStore) -> tuple[set[str], int]:
    """Every key in the run's bucket, and the multipart uploads in progress."""
    keys = {info.key for info in await blobs.list("")}
    uploads = await blobs.client.list_multipart_uploads(Bucket=blobs.bucket)
    return keys, len(uploads.get("Uploads", []))


def assert_error(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "detail"}
    assert body["error"]["code"] == code, body
    return dict(body["error"])


# -- refused at upload time -----------------------------------------------------------


def pdf() -> bytes:
    return b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"


UPLOAD_REFUSALS = [
    ("empty", "data.csv", lambda: b"", 422, "empty_file"),
    ("png-named-csv", "data.csv", lambda: b"\x89PNG\r\n\x1a\n" + bytes(200), 415, "not_csv_or_zip"),
    ("pdf-named-zip", "data.zip", pdf, 415, "not_csv_or_zip"),
    ("latin-1", "data.csv", lambda: b"name,label\ncaf\xe9,x\nthe,y\n", 422, "not_utf8"),
    (
        "over-cap",
        "big.csv",
        lambda: b"a,label\n" + b"1,x\n" * (CAP // 4 + 1000),
        413,
        "payload_too_large",
    ),
]


@pytest.mark.parametrize(
    ("filename", "make", "status", "code"),
    [case[1:] for case in UPLOAD_REFUSALS],
    ids=[case[0] for case in UPLOAD_REFUSALS],
)
async def test_refused_uploads_store_nothing(
    http: httpx.AsyncClient,
    blobs: BlobStore,
    filename: str,
    make: Callable[[], bytes],
    status: int,
    code: str,
) -> None:
    before = await stored(blobs)
    r = await http.post("/", files={"file": (filename, make())})
    assert_error(r, status, code)
    assert await stored(blobs) == before
    assert (await http.get("/")).json() == {"items": [], "next_offset": None}


async def test_a_streamed_body_over_the_cap_is_cut_off(
    http: httpx.AsyncClient, blobs: BlobStore
) -> None:
    """No Content-Length: the cap is enforced while streaming, and the upload aborted."""
    sent = [0]

    async def body() -> AsyncIterator[bytes]:
        head = (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="big.csv"\r\nContent-Type: text/csv\r\n\r\n'
        )
        yield head.encode() + b"a,label\n"
        chunk = b"1,x\n" * (256 * 1024)  # 1 MiB
        for _ in range(40):
            sent[0] += len(chunk)
            yield chunk
        yield f"\r\n--{BOUNDARY}--\r\n".encode()

    before = await stored(blobs)
    headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    r = await http.post("/", content=body(), headers=headers)
    assert_error(r, 413, "payload_too_large")
    assert await stored(blobs) == before


async def test_malformed_requests(http: httpx.AsyncClient, blobs: BlobStore) -> None:
    before = await stored(blobs)
    assert_error(await http.post("/", content=CSV), 415, "unsupported_media_type")
    assert_error(await http.post("/", data={"name": "x"}, files={}), 415, "unsupported_media_type")
    r = await http.post("/", files={"other": ("a.csv", CSV)})
    assert_error(r, 422, "invalid_upload")
    r = await http.post("/", files={"file": ("a.csv", CSV)}, data={"holdout_fraction": "0.9"})
    assert_error(r, 422, "invalid_upload")
    # text the store cannot hold (a NUL) is refused before anything is stored
    r = await http.post("/", files={"file": ("a.csv", CSV)}, data={"name": "a\x00b"})
    assert "NUL" in assert_error(r, 422, "invalid_upload")["message"]
    for seed in ("-1", "1.5", "seven", "\u00b2", str(2**63)):
        r = await http.post("/", files={"file": ("a.csv", CSV)}, data={"holdout_seed": seed})
        assert_error(r, 422, "invalid_upload")
    async with httpx.AsyncClient(base_url=GATEWAY_URL, timeout=30) as anonymous:
        r = await anonymous.post("/", files={"file": ("a.csv", CSV)})
        assert_error(r, 401, "invalid_token")
    assert await stored(blobs) == before


# -- rejected by validation -----------------------------------------------------------


def zipped(*entries: tuple[str, bytes], **info: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            item = zipfile.ZipInfo(name)
            item.compress_type = zipfile.ZIP_DEFLATED
            for key, value in info.items():
                setattr(item, key, value)
            zf.writestr(item, data)
    return buffer.getvalue()


def encrypted() -> bytes:
    data = bytearray(zipped(("secret.csv", CSV)))
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        data[data.find(signature) + offset] |= 0x1  # "encrypted", as a zip tool sets it
    return bytes(data)


def many_entries() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        for i in range(100_001):
            zf.writestr(f"d/{i}.csv", b"")
    return buffer.getvalue()


def large_expansion() -> bytes:
    """Expands past the 16 MiB cap at a modest ratio (random digits)."""
    digits = np.random.default_rng(1).integers(0, 10, 12_000_000).astype(np.uint8) + ord("0")
    text = b"a,label\n" + bytes(
        np.column_stack(
            [digits, np.full_like(digits, ord(",")), digits, np.full_like(digits, 10)]
        ).ravel()
    )
    return zipped(("big.csv", text))


def deep_latin1() -> bytes:
    rows = "".join(f"{i},{i % 2}\n" for i in range(20_000)).encode()
    return b"value,label\n" + rows + b"caf\xe9,1\n"


REJECTIONS = [
    ("ragged", "r.csv", lambda: b"a,b,label\n1,2,x\n3,4,y\n5,6\n7,8,x\n", {}, "ragged_row", 4),
    (
        "no-label-column",
        "c.csv",
        lambda: CSV,
        {"label_column": "nope"},
        "missing_label_column",
        None,
    ),
    ("single-class", "s.csv", lambda: b"a,label\n1,x\n2,x\n3,x\n", {}, "single_class", None),
    ("dot-dot", "z.zip", lambda: zipped(("../evil.csv", CSV)), {}, "bad_archive_entry", None),
    ("absolute", "z.zip", lambda: zipped(("/tmp/evil.csv", CSV)), {}, "bad_archive_entry", None),
    (
        "symlink",
        "z.zip",
        lambda: zipped(("link.csv", b"/etc/passwd"), external_attr=(stat.S_IFLNK | 0o777) << 16),
        {},
        "bad_archive_entry",
        None,
    ),
    ("encrypted", "z.zip", encrypted, {}, "bad_archive_entry", None),
    (
        "nested-zip",
        "z.zip",
        lambda: zipped(("inner.zip", zipped(("a.csv", CSV)))),
        {},
        "bad_archive_entry",
        None,
    ),
    (
        "bomb-ratio",
        "z.zip",
        lambda: zipped(("zeros.csv", b"a,label\n" + b"0,0\n" * 4_000_000)),
        {},
        "decompression_bomb",
        None,
    ),
    ("bomb-total", "z.zip", large_expansion, {}, "decompression_bomb", None),
    ("too-many-entries", "z.zip", many_entries, {}, "too_many_entries", None),
    ("latin-1-deep", "l.csv", deep_latin1, {}, "not_utf8", 20_002),
    (
        "huge-field",
        "f.csv",
        lambda: b"a,label\n1,x\n" + b"y" * (1024 * 1024 + 10) + b",x\n",
        {},
        "field_too_large",
        3,
    ),
]


@pytest.mark.parametrize(
    ("filename", "make", "fields", "code", "line"),
    [case[1:] for case in REJECTIONS],
    ids=[case[0] for case in REJECTIONS],
)
async def test_rejected_datasets_say_why_and_leave_nothing(
    http: httpx.AsyncClient,
    blobs: BlobStore,
    eventually: Callable[..., Any],
    filename: str,
    make: Callable[[], bytes],
    fields: dict[str, str],
    code: str,
    line: int | None,
) -> None:
    r = await http.post("/", files={"file": (filename, make())}, data=fields)
    assert r.status_code == 202, r.text
    dataset_id = r.json()["dataset_id"]

    async def decided() -> dict[str, Any] | None:
        body = (await http.get(f"/{dataset_id}")).json()
        return body if body["status"] != "validating" else None

    body = await eventually(decided, timeout=120, what=f"validation of {filename}")
    assert body["status"] == "rejected", body
    assert body["error"]["code"] == code, body["error"]
    assert body["error"]["message"]
    if line is not None:
        assert body["error"]["detail"]["line"] == line
        assert f"line {line}" in body["error"]["message"]
    assert await blobs.list(f"datasets/{dataset_id}/") == []
    assert_error(await http.get(f"/{dataset_id}/preview"), 409, "dataset_not_ready")


async def test_formula_cells_are_kept_as_data(
    http: httpx.AsyncClient, eventually: Callable[..., Any]
) -> None:
    cells = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)"]
    text = "note,value,label\n" + "".join(f'"{cells[i % 4]}",{i},{i % 2}\n' for i in range(40))
    r = await http.post("/", files={"file": ("f.csv", text.encode())})
    dataset_id = r.json()["dataset_id"]

    async def decided() -> dict[str, Any] | None:
        body = (await http.get(f"/{dataset_id}")).json()
        return body if body["status"] != "validating" else None

    body = await eventually(decided, timeout=60, what="validation")
    assert body["status"] == "validated", body
    assert {c["name"]: c["type"] for c in body["schema"]}["note"] == "categorical"
    preview = (await http.get(f"/{dataset_id}/preview")).json()
    assert [row[0] for row in preview["rows"][:4]] == cells
