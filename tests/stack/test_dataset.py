"""The dataset service on the real stack, through the gateway: upload, validation,
preview, listing, sharding for a job, deletion.

The auth service (port 8001) issues the tokens; the dataset service (port 8003) runs
as a subprocess with a bucket, queues and scratch folder of this run's own (see
``peertrain.testkit.dataset``). ``job.created`` is appended the way the orchestrator
will, and published by an outbox relay run here.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import uuid
import zipfile
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image

from peertrain.common.blobs import BlobStore
from peertrain.common.bus import EVENTS, OutboxRelay, make_broker
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent, RecordedEvent, to_message
from peertrain.common.events.datasets import (
    DATASET_SHARDED,
    DatasetSharded,
    DatasetShardingFailed,
    DatasetValidated,
    dataset_stream,
    sharding_stream,
)
from peertrain.common.events.training import JOB_CREATED, JobCreated, ShardingSpec, job_stream
from peertrain.dataset.config import DatasetSettings
from peertrain.testkit.auth import AuthUnderTest, shared_auth_service
from peertrain.testkit.common import GATEWAY
from peertrain.testkit.dataset import GATEWAY_URL, DatasetService, running_dataset_service

AUTH_URL = f"{GATEWAY}/api/auth"


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
        run=f"{run_id}-ok",
        base_dir=tmp_path_factory.getbasetemp(),
        extra={"PEERTRAIN_DATASET_MAX_UPLOAD_BYTES": str(16 * 1024 * 1024)},
    ) as running:
        yield running


@pytest.fixture
async def blobs(service: tuple[DatasetService, str]) -> AsyncIterator[BlobStore]:
    config = DatasetSettings(s3_bucket=service[1]).blob_store_config()
    async with BlobStore(config) as store:
        yield store


async def token(http: httpx.AsyncClient) -> tuple[str, str]:
    """A new user's (id, access token)."""
    name, password = f"d{uuid.uuid4().hex[:12]}", f"pass {uuid.uuid4().hex}"
    r = await http.post(f"{AUTH_URL}/register", json={"username": name, "password": password})
    assert r.status_code == 201, r.text
    user_id = r.json()["id"]
    r = await http.post(f"{AUTH_URL}/token", data={"username": name, "password": password})
    assert r.status_code == 200, r.text
    return user_id, r.json()["access_token"]


@pytest.fixture
async def user(service: tuple[DatasetService, str]) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    async with httpx.AsyncClient(timeout=60) as plain:
        user_id, access = await token(plain)
    headers = {"Authorization": f"Bearer {access}"}
    async with httpx.AsyncClient(base_url=GATEWAY_URL, headers=headers, timeout=120) as http:
        yield user_id, http


async def upload(
    http: httpx.AsyncClient, filename: str, data: bytes, **fields: str
) -> httpx.Response:
    return await http.post("/", files={"file": (filename, data)}, data=fields)


async def settled(
    http: httpx.AsyncClient, dataset_id: str, eventually: Callable[..., Any]
) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        r = await http.get(f"/{dataset_id}")
        assert r.status_code == 200, r.text
        body = r.json()
        return body if body["status"] != "validating" else None

    return dict(await eventually(check, timeout=120, what=f"dataset {dataset_id} decided"))


async def validated(
    http: httpx.AsyncClient,
    filename: str,
    data: bytes,
    eventually: Callable[..., Any],
    **fields: str,
) -> dict[str, Any]:
    r = await upload(http, filename, data, **fields)
    assert r.status_code == 202, r.text
    assert r.json()["status"] == "validating"
    body = await settled(http, r.json()["dataset_id"], eventually)
    assert body["status"] == "validated", body
    return body


def csv_rows(rows: int, *, seed: int = 0, delimiter: str = ",") -> bytes:
    rng = np.random.default_rng(seed)
    d = delimiter
    lines = [d.join(["age", "income", "member", "city", "label"])]
    for i in range(rows):
        income = "NA" if i % 17 == 0 else f"{rng.normal(50, 10):.2f}"
        city = ("paris", "oslo", "lima", "")[i % 4]
        lines.append(
            d.join([f" {20 + i % 50} ", income, ("yes", "no")[i % 2], city, ("a", "b", "c")[i % 3]])
        )
    return ("\n".join(lines) + "\n").encode()


async def test_clean_csv_is_validated_with_its_counts(
    user: tuple[str, httpx.AsyncClient], eventually: Callable[..., Any], blobs: BlobStore
) -> None:
    _, http = user
    body = await validated(http, "people.csv", csv_rows(300), eventually, name="people")
    assert body["name"] == "people"
    assert body["rows"] == 300 and body["columns"] == 5
    assert body["label_column"] == "label"
    assert body["classes"] == ["a", "b", "c"] and body["class_counts"] == [100, 100, 100]
    assert body["holdout_rows"] == 30 and body["train_rows"] == 270
    types = {c["name"]: c["type"] for c in body["schema"]}
    assert types == {
        "age": "numeric",
        "income": "numeric",
        "member": "boolean",
        "city": "categorical",
        "label": "label",
    }
    assert body["input_shape"] == [7]  # age, income, member, city (3 + missing)
    assert body["error"] is None
    raw = csv_rows(300)
    assert body["sha256"] == hashlib.sha256(raw).hexdigest() and body["size"] == len(raw)

    preview = (await http.get(f"/{body['id']}/preview")).json()
    assert preview["columns"] == ["age", "income", "member", "city", "label"]
    assert preview["rows"][0] == ["20", "NA", "yes", "paris", "a"]

    listing = (await http.get("/")).json()
    assert [d["id"] for d in listing["items"]] == [body["id"]] and listing["next_offset"] is None
    keys = sorted(
        i.key.removeprefix(f"datasets/{body['id']}/")
        for i in await blobs.list(f"datasets/{body['id']}/")
    )
    assert keys == [
        "holdout.npz",
        "preview.json",
        "raw/people.csv",
        "schema.json",
        "train/X.npy",
        "train/y.npy",
    ]

    # Someone else sees nothing of it.
    async with httpx.AsyncClient(timeout=60) as plain:
        _, other = await token(plain)
    headers = {"Authorization": f"Bearer {other}"}
    async with httpx.AsyncClient(base_url=GATEWAY_URL, headers=headers, timeout=60) as stranger:
        assert (await stranger.get(f"/{body['id']}")).status_code == 404
        assert (await stranger.get("/")).json() == {"items": [], "next_offset": None}
        assert (await stranger.delete(f"/{body['id']}")).status_code == 404


async def test_gzip_csv_with_semicolons(
    user: tuple[str, httpx.AsyncClient], eventually: Callable[..., Any]
) -> None:
    _, http = user
    data = gzip.compress(csv_rows(120, delimiter=";"))
    body = await validated(http, "people.csv.gz", data, eventually, holdout_fraction="0.25")
    assert body["rows"] == 120 and body["holdout_rows"] == 30
    assert body["class_counts"] == [40, 40, 40]


async def test_a_chosen_holdout_seed_gives_every_upload_the_same_split(
    user: tuple[str, httpx.AsyncClient], eventually: Callable[..., Any], mongo: Any, auth: Any
) -> None:
    _, http = user
    data = csv_rows(200, seed=3)
    seeded = [await validated(http, "people.csv", data, eventually, holdout_seed="7") for _ in "ab"]
    drawn = await validated(http, "people.csv", data, eventually)
    assert [b["holdout_seed"] for b in seeded] == [7, 7] and drawn["holdout_seed"] is None
    log = EventLog(mongo[auth.mongo_db])

    async def holdout_sha(body: dict[str, Any]) -> str:
        events = await log.read_stream(dataset_stream(body["id"]))
        (done,) = [e for e in events if isinstance(e.data, DatasetValidated)]
        return done.data.holdout.sha256

    first, second = [await holdout_sha(b) for b in seeded]
    assert first == second != await holdout_sha(drawn)


async def test_n_a_and_stray_words_keep_a_column_numeric_and_are_reported(
    user: tuple[str, httpx.AsyncClient], eventually: Callable[..., Any]
) -> None:
    _, http = user
    rng = np.random.default_rng(4)
    lines = ["temp,city,label"]
    for i in range(400):
        temp = "n/a" if i % 20 == 0 else "unknown" if i % 50 == 3 else f"{rng.normal(20, 5):.2f}"
        lines.append(f"{temp},{('oslo', 'lima', 'NULL', 'tbd')[i % 4]},{('a', 'b')[i % 2]}")
    data = ("\n".join(lines) + "\n").encode()
    body = await validated(http, "temps.csv", data, eventually)
    temp = body["schema"][0]
    assert (temp["type"], temp["missing"], temp["non_numbers"]) == ("numeric", 28, 8)
    assert temp["non_number_examples"] == ["unknown"]
    assert temp["reason"].startswith("numeric: 97.9% of present cells are numbers; 8 cells")
    assert body["input_shape"] == [5]  # temp; city one-hot (lima, oslo, tbd) + missing
    assert body["missing_values"] == ["", "NA", "N/A", "NaN", "null", "None", "?", "-"]
    (note,) = body["notes"]
    assert "column 'temp' is kept numeric" in note and "'unknown'" in note

    chosen = await validated(http, "temps.csv", data, eventually, missing_values="n/a,tbd")
    assert chosen["missing_values"] == ["", "n/a", "tbd"]
    city = chosen["schema"][1]
    assert (city["type"], city["distinct"], city["missing"]) == ("categorical", 3, 100)


async def test_zip_of_csvs_is_concatenated(
    user: tuple[str, httpx.AsyncClient], eventually: Callable[..., Any]
) -> None:
    _, http = user
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("2023.csv", csv_rows(90, seed=1))
        zf.writestr("2024.csv", csv_rows(60, seed=2))
    body = await validated(http, "years.zip", buffer.getvalue(), eventually, label_column="member")
    assert body["rows"] == 150
    assert body["label_column"] == "member"
    assert body["classes"] == ["no", "yes"]


async def test_a_wide_table_keeps_its_schema_in_the_bucket(
    user: tuple[str, httpx.AsyncClient], eventually: Callable[..., Any]
) -> None:
    _, http = user
    header = ",".join(f"x{i}" for i in range(300)) + ",label\n"
    rows = "".join(
        ",".join(str((i * j) % 7) for j in range(300)) + f",{i % 2}\n" for i in range(40)
    )
    body = await validated(http, "wide.csv", (header + rows).encode(), eventually)
    assert body["columns"] == 301 and len(body["schema"]) == 301
    assert body["input_shape"] == [300]


def image_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for label, colour in (("circle", 40), ("square", 200), ("star", 120)):
            for i in range(12):
                img = Image.new("RGB" if i % 4 == 0 else "L", (16, 16) if i else (32, 24), colour)
                out = io.BytesIO()
                img.save(out, format="PNG")
                zf.writestr(f"shapes/{label}/{i:03d}.png", out.getvalue())
    return buffer.getvalue()


async def test_image_zip_is_validated(
    user: tuple[str, httpx.AsyncClient], eventually: Callable[..., Any]
) -> None:
    _, http = user
    body = await validated(http, "shapes.zip", image_zip(), eventually)
    assert body["kind"] == "images"
    assert body["rows"] == 36
    assert body["classes"] == ["circle", "square", "star"]
    assert body["class_counts"] == [12, 12, 12]
    assert body["input_shape"] == [3, 16, 16]  # any RGB image makes it RGB; most common size
    preview = (await http.get(f"/{body['id']}/preview")).json()
    assert preview["rows"][0][:2] == ["shapes/circle/000.png", "circle"]


@pytest.fixture
async def orchestrator(
    auth: AuthUnderTest, mongo: Any, settings: Any, run_id: str
) -> AsyncIterator[EventLog]:
    """The event log, with a relay publishing what this test appends as the orchestrator."""
    log = EventLog(mongo[auth.mongo_db])
    broker = make_broker(settings.amqp_url.get_secret_value())
    await broker.connect()
    relay = OutboxRelay(log, broker, producer=f"orchestrator-test-{run_id}")
    relay.start()
    try:
        yield log
    finally:
        await relay.stop()
        await broker.stop()


async def create_job(
    log: EventLog, owner_id: str, dataset_id: str, peers: int, sharding: ShardingSpec, run: str
) -> str:
    job_id = str(uuid.uuid4())
    job = JobCreated(
        job_id=job_id,
        owner_id=owner_id,
        name="test job",
        dataset_id=dataset_id,
        peers=tuple(f"peer-{k}" for k in range(peers)),
        sharding=sharding,
        model={"arch": "mlp", "hidden": [16]},
    )
    event = NewEvent.of(
        job, producer=f"orchestrator-test-{run}", actor=owner_id, correlation_id=job_id
    )
    await log.append(job_stream(job_id), [event], expected_version=0)
    return job_id


async def outcome(log: EventLog, job_id: str, eventually: Callable[..., Any]) -> RecordedEvent:
    async def check() -> RecordedEvent | None:
        events = await log.read_stream(sharding_stream(job_id))
        return events[0] if events else None

    event: RecordedEvent = await eventually(check, timeout=120, what=f"sharding of {job_id}")
    return event


async def fetch_npz(blobs: BlobStore, key: str, sha256: str) -> dict[str, np.ndarray]:
    data = await blobs.get_bytes(key)
    assert hashlib.sha256(data).hexdigest() == sha256
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        return {"X": npz["X"], "y": npz["y"]}


async def test_a_job_gets_one_stratified_shard_per_peer(
    user: tuple[str, httpx.AsyncClient],
    eventually: Callable[..., Any],
    orchestrator: EventLog,
    blobs: BlobStore,
    run_id: str,
) -> None:
    user_id, http = user
    body = await validated(http, "people.csv", csv_rows(300, seed=4), eventually)
    spec = ShardingSpec(strategy="stratified", seed=5)
    job_id = await create_job(orchestrator, user_id, body["id"], 3, spec, run_id)
    event = await outcome(orchestrator, job_id, eventually)
    assert event.type == DATASET_SHARDED
    sharded = event.data
    assert isinstance(sharded, DatasetSharded)
    assert sharded.job_id == job_id and sharded.sharding == spec
    assert [s.peer_id for s in sharded.shards] == ["peer-0", "peer-1", "peer-2"]
    assert sharded.feature_spec.input_size == 7
    assert sharded.feature_spec.classes == ("a", "b", "c")
    total = 0
    for shard in sharded.shards:
        assert shard.key == f"jobs/{job_id}/shards/{shard.index}.npz"
        arrays = await fetch_npz(blobs, shard.key, shard.sha256)
        assert arrays["X"].shape == (shard.rows, 7) and arrays["X"].dtype == np.float32
        assert arrays["y"].dtype == np.int64
        assert tuple(np.bincount(arrays["y"], minlength=3)) == shard.class_counts
        assert shard.class_counts == (30, 30, 30)  # 90 training rows per class, 3 peers
        total += shard.rows
    assert total == body["train_rows"] == 270
    held = await fetch_npz(blobs, sharded.holdout.key, sharded.holdout.sha256)
    assert sharded.holdout.key == f"jobs/{job_id}/holdout.npz"
    assert len(held["y"]) == sharded.holdout.rows == 30


async def test_dirichlet_shards_are_deterministic_and_never_empty(
    user: tuple[str, httpx.AsyncClient],
    eventually: Callable[..., Any],
    orchestrator: EventLog,
    blobs: BlobStore,
    run_id: str,
) -> None:
    user_id, http = user
    body = await validated(http, "shapes.zip", image_zip(), eventually)
    spec = ShardingSpec(strategy="dirichlet", alpha=0.1, seed=11)
    jobs = [await create_job(orchestrator, user_id, body["id"], 4, spec, run_id) for _ in range(2)]
    results = [(await outcome(orchestrator, j, eventually)).data for j in jobs]
    assert all(isinstance(r, DatasetSharded) for r in results)
    first, second = results
    assert isinstance(first, DatasetSharded) and isinstance(second, DatasetSharded)
    assert [s.sha256 for s in first.shards] == [s.sha256 for s in second.shards]
    assert all(s.rows > 0 for s in first.shards)
    assert sum(s.rows for s in first.shards) == body["train_rows"]
    arrays = await fetch_npz(blobs, first.shards[0].key, first.shards[0].sha256)
    assert arrays["X"].shape[1:] == tuple(first.feature_spec.input_shape) == (3, 16, 16)


async def test_jobs_that_cannot_be_sharded_say_why(
    user: tuple[str, httpx.AsyncClient],
    eventually: Callable[..., Any],
    orchestrator: EventLog,
    run_id: str,
) -> None:
    user_id, http = user
    body = await validated(http, "people.csv", csv_rows(60), eventually)
    too_many = await create_job(orchestrator, user_id, body["id"], 100, ShardingSpec(), run_id)
    not_theirs = await create_job(
        orchestrator, "someone-else", body["id"], 2, ShardingSpec(), run_id
    )
    unknown = await create_job(orchestrator, user_id, str(uuid.uuid4()), 2, ShardingSpec(), run_id)
    reasons = {}
    for job_id in (too_many, not_theirs, unknown):
        failed = (await outcome(orchestrator, job_id, eventually)).data
        assert isinstance(failed, DatasetShardingFailed)
        reasons[job_id] = failed.code
    assert reasons == {
        too_many: "too_few_rows",
        not_theirs: "dataset_not_found",
        unknown: "dataset_not_found",
    }


async def test_owner_deletes_a_dataset_and_its_objects(
    user: tuple[str, httpx.AsyncClient], eventually: Callable[..., Any], blobs: BlobStore
) -> None:
    _, http = user
    body = await validated(http, "people.csv", csv_rows(60), eventually)
    prefix = f"datasets/{body['id']}/"
    assert await blobs.list(prefix)
    r = await http.delete(f"/{body['id']}")
    assert r.status_code == 204, r.text
    assert await blobs.list(prefix) == []
    r = await http.get(f"/{body['id']}")
    assert r.status_code == 404 and r.json()["error"]["code"] == "dataset_not_found"
    assert body["id"] not in [d["id"] for d in (await http.get("/")).json()["items"]]
    assert (await http.delete(f"/{body['id']}")).status_code == 404


async def test_a_redelivered_job_is_sharded_once(
    user: tuple[str, httpx.AsyncClient],
    eventually: Callable[..., Any],
    orchestrator: EventLog,
    settings: Any,
    run_id: str,
) -> None:
    user_id, http = user
    body = await validated(http, "people.csv", csv_rows(90), eventually)
    job_id = await create_job(orchestrator, user_id, body["id"], 2, ShardingSpec(), run_id)
    first = await outcome(orchestrator, job_id, eventually)
    (job_event,) = await orchestrator.read_stream(job_stream(job_id))
    broker = make_broker(settings.amqp_url.get_secret_value())
    await broker.connect()
    try:  # the same event again, as a redelivery would bring it
        await broker.publish(
            to_message(job_event),
            exchange=EVENTS,
            routing_key=JOB_CREATED,
            persist=True,
            message_id=job_event.id,
            content_type="application/json",
        )
    finally:
        await broker.stop()
    # The queue is handled in order: once a later job is sharded, the copy was handled.
    later = await create_job(orchestrator, user_id, body["id"], 2, ShardingSpec(), run_id)
    await outcome(orchestrator, later, eventually)
    events = await orchestrator.read_stream(sharding_stream(job_id))
    assert [e.id for e in events] == [first.id]
