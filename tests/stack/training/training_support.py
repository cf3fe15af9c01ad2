"""Support for the end-to-end training tests: the whole platform on the real stack.

One auth, registry, dataset service, orchestrator and aggregator (real processes on
their usual ports, behind the gateway), sharing one event log and one bucket, plus real
``peertrain-peer run`` processes. Tests talk to the platform only through the gateway,
as a user would; they read the event log only to check lineage.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import os
import time
import uuid
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import numpy as np
import pytest
import torch
from prometheus_client.parser import text_string_to_metric_families
from pymongo import MongoClient
from safetensors.torch import load as load_safetensors

from peertrain.client import TokenAuth, Tokens
from peertrain.common.blobs import BlobStore
from peertrain.common.events.datasets import FeatureSpec
from peertrain.common.settings import ServiceSettings
from peertrain.ml.training import Inputs, read_samples
from peertrain.testkit.auth import shared_auth_service
from peertrain.testkit.common import (
    GATEWAY,
    PLATFORM_PORTS,
    RABBIT_API,
    ServiceProcess,
    child_env,
    free_port,
    scraped,
)
from peertrain.testkit.dataset import running_dataset_service
from peertrain.testkit.orchestrator import orchestrator_process
from peertrain.testkit.peer import PeerProcess
from peertrain.testkit.registry import registry_process

MGMT = RABBIT_API
ROOT = Path(__file__).resolve().parents[3]
HEARTBEAT_S = 1.0


def shared_data() -> Path:
    """``../shared/data`` of the project (``PEERTRAIN_DATA_DIR`` overrides)."""
    candidates = [os.environ.get("PEERTRAIN_DATA_DIR", ""), ROOT.parent / "shared" / "data"]
    candidates.append(Path("/work/shared/data"))
    for c in candidates:
        if c and (Path(c) / "mnist").is_dir():
            return Path(c)
    pytest.fail("the shared datasets (../shared/data) are missing; set PEERTRAIN_DATA_DIR")


def points_apart(a: float, b: float) -> float:
    """Percentage points between two accuracies, free of binary-float noise (0.9355 and
    0.9255 are one point apart, not 1.0000000000000009)."""
    return round(abs(a - b) * 100, 9)


def _idx(path: Path) -> np.ndarray:
    raw = gzip.decompress(path.read_bytes())
    dims = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


@cache
def mnist_csv_gz() -> bytes:
    """MNIST 10k as ``label,p0..p783`` CSV (gzip): what a user would upload.

    Made once per session (numpy's ``savetxt`` takes seconds of CPU; tests upload it
    again and again)."""
    base = shared_data() / "mnist"
    images = _idx(base / "t10k-images-idx3-ubyte.gz").reshape(10_000, 784)
    labels = _idx(base / "t10k-labels-idx1-ubyte.gz")
    out = io.StringIO()
    out.write("label," + ",".join(f"p{i}" for i in range(784)) + "\n")
    table = np.concatenate([labels[:, None], images], axis=1)
    np.savetxt(out, table, fmt="%d", delimiter=",")
    return gzip.compress(out.getvalue().encode(), compresslevel=1)


@cache
def mnist_png_zip() -> bytes:
    """MNIST 10k as ``<label>/<n>.png`` (28x28 grey): the same images as
    :func:`mnist_csv_gz`, zipped as a user zips an image folder (a ``cnn`` needs them)."""
    from PIL import Image

    base = shared_data() / "mnist"
    images = _idx(base / "t10k-images-idx3-ubyte.gz").reshape(10_000, 28, 28)
    labels = _idx(base / "t10k-labels-idx1-ubyte.gz")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for n, (pixels, label) in enumerate(zip(images, labels, strict=True)):
            png = io.BytesIO()
            Image.fromarray(pixels.astype(np.uint8), "L").save(png, "PNG")
            zf.writestr(f"{int(label)}/{n:05d}.png", png.getvalue())
    return out.getvalue()


def colour_images_zip(classes: int, per_class: int, seed: int = 0) -> bytes:
    """``<class>/<n>.png``: 32x32 RGB images, each class a colour plus Gaussian noise
    (an image dataset as a user zips one; easy to learn, quick to make)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    colours = rng.uniform(40, 215, size=(classes, 3))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for c in range(classes):
            for n in range(per_class):
                pixels = colours[c] + rng.normal(0, 40, size=(32, 32, 3))
                png = io.BytesIO()
                Image.fromarray(pixels.clip(0, 255).astype(np.uint8), "RGB").save(png, "PNG")
                zf.writestr(f"class{c}/{n}.png", png.getvalue())
    return out.getvalue()


def letters_csv() -> bytes:
    """UCI letter recognition with a header row (label first)."""
    body = (shared_data() / "letter-recognition" / "letter-recognition.data").read_text()
    header = "letter," + ",".join(f"f{i}" for i in range(16))
    return (header + "\n" + body).encode()


@dataclass
class Platform:
    """Everything running, and a user with a logged-in client.

    ``auth`` is the user's session: the SDK's token flow, which renews the access token
    before it expires and on a 401, so a test may run longer than a token lives.
    """

    base: Path
    mongo_db: str
    bucket: str
    services: dict[str, ServiceProcess]
    peers: dict[str, PeerProcess] = field(default_factory=dict)
    auth: TokenAuth | None = None
    user_id: str = ""
    username: str = ""
    password: str = ""
    """The user's login (the browser test logs in with it, as a person would)."""
    datasets: dict[str, str] = field(default_factory=dict)
    queue_prefixes: list[str] = field(default_factory=list)
    """The services' queue names start with one of these (plus ``.``)."""

    def client(self) -> httpx.AsyncClient:
        """A client of the gateway, logged in as the platform's user."""
        return httpx.AsyncClient(base_url=GATEWAY, auth=self.auth, timeout=120)

    def enroll(self) -> str:
        """A one-time enrollment token for a new peer of the platform's user."""
        r = httpx.post(f"{GATEWAY}/api/auth/peer-enrollments", auth=self.auth, timeout=30)
        assert r.status_code == 201, r.text
        return str(r.json()["enrollment_token"])

    def peer(
        self,
        name: str,
        *,
        mode: str | None = None,
        env: dict[str, str] | None = None,
        threads: int = 1,
    ) -> PeerProcess:
        """A running peer named ``name`` (enrolled and started on first use).

        ``mode`` runs ``tests/stack/hostile_peer.py --mode MODE`` instead of the real
        runtime; ``env`` adds variables.
        """
        peer = self.peers.get(name)
        if peer is None:
            peer = PeerProcess.enroll(
                GATEWAY,
                self.enroll(),
                config_dir=self.base / f"peer-{name}",
                log_dir=self.base,
                name=f"{name}-{uuid.uuid4().hex[:6]}",
            )
            self.peers[name] = peer
        if not peer.running:
            start_peer(peer, mode=mode, env=env, threads=threads)
        return peer


def start_peer(
    peer: PeerProcess, *, mode: str | None, env: dict[str, str] | None, threads: int
) -> None:
    """Start a peer with ``threads`` torch threads (one keeps runs bit-reproducible)."""
    extra = {"PEERTRAIN_PEER_THREADS": str(threads), **(env or {})}
    if mode is None:
        peer.start(interval_s=HEARTBEAT_S, env=extra)
    else:
        script = ROOT / "tests" / "stack" / "hostile_peer.py"
        peer.start(interval_s=HEARTBEAT_S, script=script, args=["--mode", mode], env=extra)


def aggregator_process(
    *,
    mongo_db: str,
    bucket: str,
    log_dir: Path,
    prefix: str,
    port: int = PLATFORM_PORTS["aggregator"],
) -> ServiceProcess:
    env = child_env(
        "aggregator",
        {
            "PEERTRAIN_AGGREGATOR_PORT": str(port),
            "PEERTRAIN_AGGREGATOR_HOST": "127.0.0.1",
            "PEERTRAIN_AGGREGATOR_MONGO_DB": mongo_db,
            "PEERTRAIN_AGGREGATOR_S3_BUCKET": bucket,
            "PEERTRAIN_AGGREGATOR_QUEUE_PREFIX": prefix,
            "PEERTRAIN_AGGREGATOR_ENVIRONMENT": "test",
            "PEERTRAIN_AGGREGATOR_WORK_DIR": str(log_dir / "aggregator-work"),
        },
    )
    return ServiceProcess(
        "aggregator",
        ["-m", "peertrain.aggregator"],
        env,
        port,
        log_dir / f"aggregator-{mongo_db}.log",
        ready_path="/api/models/readyz",
    )


def _drop_own_databases(mongo_db: str, services: tuple[str, ...]) -> None:
    with MongoClient(ServiceSettings().mongo_url, serverSelectionTimeoutMS=5000) as client:
        for service in services:
            client.drop_database(f"{mongo_db}_{service}")


def queue_depths(p: Platform, names: list[str]) -> dict[str, int]:
    """Messages waiting in each of the platform's queues and in the queues of its peers
    called ``names``."""
    peer_queues = {f"peer.{p.peers[name].peer_id}" for name in names}
    with httpx.Client(base_url=MGMT, auth=("admin", "admin"), timeout=10) as mgmt:
        r = mgmt.get("/queues/%2F", params={"columns": "name,messages"})
        r.raise_for_status()
    return {
        q["name"]: int(q.get("messages") or 0)
        for q in r.json()
        if any(q["name"].startswith(pre + ".") for pre in p.queue_prefixes)
        or q["name"].removesuffix(".dlq") in peer_queues
    }


def drop_instance_queues(p: Platform, instance_names: list[str]) -> None:
    """Delete the own queues (``<prefix>.<purpose>.<instance>``: the feeds, the
    orchestrator's ``tasks``) of instances gone for good: the broker keeps them until
    ``feed_expires_s``, filling with events."""
    own = tuple(f".{name}" for name in instance_names)
    with httpx.Client(base_url=MGMT, auth=("admin", "admin"), timeout=10) as mgmt:
        r = mgmt.get("/queues/%2F", params={"columns": "name"})
        r.raise_for_status()
        for q in r.json():
            name = q["name"]
            if name.endswith(own) and any(name.startswith(pre + ".") for pre in p.queue_prefixes):
                mgmt.delete(f"/queues/%2F/{quote(name, safe='')}").raise_for_status()


def _delete_queues(prefixes: list[str], peer_ids: list[str]) -> None:
    with httpx.Client(base_url=MGMT, auth=("admin", "admin"), timeout=10) as mgmt:
        for peer_id in peer_ids:
            mgmt.delete(f"/users/{quote('peer-' + peer_id, safe='')}")
            for q in (f"peer.{peer_id}", f"peer.{peer_id}.dlq"):
                mgmt.delete(f"/queues/%2F/{quote(q, safe='')}")
        r = mgmt.get("/queues/%2F", params={"columns": "name"})
        for q in r.json() if r.status_code == 200 else []:
            if any(q["name"].startswith(p + ".") for p in prefixes):
                mgmt.delete(f"/queues/%2F/{quote(q['name'], safe='')}")


INSTANCES = 2
"""Orchestrators and aggregators the training tests' platform runs (``instances``)."""


def run_platform(
    run_id: str,
    tmp_path_factory: pytest.TempPathFactory,
    *,
    registry_env: dict[str, str] | None = None,
    orchestrator_env: dict[str, str] | None = None,
    instances: int = 1,
) -> Iterator[Platform]:
    """Start the platform; yield it; stop it and remove its queues. ``registry_env`` and
    ``orchestrator_env`` add variables (the addresses they advertise to peers).

    ``instances`` orchestrators and aggregators run: the gateway reaches the first of
    each (on the platform's ports), the others listen on free ports (and the local
    Prometheus scrapes them), and jobs are spread over all of them (leases)."""
    base = tmp_path_factory.mktemp("training")
    run = f"{run_id}{uuid.uuid4().hex[:4]}"
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as auth:
        mongo_db = auth.mongo_db
        prefixes = [f"registry.{run}", f"orchestrator-{run}", f"aggregator-{run}"]
        registry = registry_process(
            mongo_db=mongo_db,
            log_dir=base,
            namespace=prefixes[0],
            extra_env={"PEERTRAIN_REGISTRY_OFFLINE_AFTER_INTERVALS": "5", **(registry_env or {})},
        )
        registry.start()
        peer_ids: list[str] = []
        try:
            with running_dataset_service(mongo_db=mongo_db, run=run, base_dir=base) as (ds, bucket):
                running: dict[str, ServiceProcess] = {}
                targets = ExitStack()  # the local Prometheus scrapes the extra instances
                for i in range(instances):
                    suffix = "" if i == 0 else f"-{i + 1}"
                    log_dir = base if i == 0 else base / f"instance{suffix}"
                    log_dir.mkdir(exist_ok=True)
                    running["orchestrator" + suffix] = orchestrator_process(
                        mongo_db=mongo_db,
                        log_dir=log_dir,
                        queue_prefix=prefixes[1],
                        extra_env={
                            "PEERTRAIN_ORCHESTRATOR_S3_BUCKET": bucket,
                            **(orchestrator_env or {}),
                        },
                        **({} if i == 0 else {"port": free_port()}),
                    )
                    running["aggregator" + suffix] = aggregator_process(
                        mongo_db=mongo_db,
                        bucket=bucket,
                        log_dir=log_dir,
                        prefix=prefixes[2],
                        **({} if i == 0 else {"port": free_port()}),
                    )
                for service in running.values():
                    if service.port != PLATFORM_PORTS[service.name]:
                        targets.enter_context(scraped(service.name, service.port))
                try:
                    with ThreadPoolExecutor(max_workers=len(running)) as pool:
                        list(pool.map(lambda s: s.start(), running.values()))
                except BaseException:  # those that did start must not outlive the run
                    for service in running.values():
                        service.stop()
                    targets.close()
                    raise
                p = Platform(
                    base,
                    mongo_db,
                    bucket,
                    {"registry": registry, "dataset": ds, **running},
                    queue_prefixes=prefixes,
                )
                try:
                    _login(p)
                    yield p
                finally:
                    # all at once: each says goodbye and waits for its broker link to close
                    with ThreadPoolExecutor(max_workers=16) as pool:
                        list(pool.map(lambda peer: peer.stop(), p.peers.values()))
                        list(pool.map(lambda s: s.stop(), running.values()))
                    targets.close()
                    peer_ids = [peer.peer_id for peer in p.peers.values()]
                    _delete_queues(prefixes, peer_ids)
        finally:
            registry.stop()
            # Again once the registry is gone: until it stopped it declared its queues and
            # the peers' again when they were deleted under it, and queues left behind stay
            # bound to the exchanges, take a copy of every later run's peer messages, and
            # once full refuse them (a later run on the same stack stalls).
            _delete_queues(prefixes, peer_ids)
            # The services' own databases outlive the log (dropped with auth): a later
            # module starting a registry on the same names would load stale peers.
            _drop_own_databases(mongo_db, ("registry", "orchestrator", "aggregator"))


def _login(p: Platform) -> None:
    name, password = f"trainer{uuid.uuid4().hex[:8]}", f"pass {uuid.uuid4().hex}"
    auth = f"{GATEWAY}/api/auth"
    r = httpx.post(f"{auth}/register", json={"username": name, "password": password}, timeout=30)
    assert r.status_code == 201, r.text
    p.user_id, p.username, p.password = r.json()["id"], name, password
    r = httpx.post(f"{auth}/token", data={"username": name, "password": password}, timeout=30)
    assert r.status_code == 200, r.text
    p.auth = TokenAuth(Tokens.from_pair(r.json(), name), refresh_url=f"{auth}/refresh")


# -- helpers the tests share -------------------------------------------------------------


async def wait_for(check: Any, *, timeout: float, what: str, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(every)
    raise AssertionError(f"timed out waiting for {what} (last: {str(last)[:2000]})")


async def dataset(p: Platform, name: str, filename: str, data: bytes, **fields: str) -> str:
    """Upload once per platform; the dataset id once validated."""
    if name in p.datasets:
        return p.datasets[name]
    async with p.client() as http:
        r = await http.post(
            "/api/datasets", files={"file": (filename, data)}, data={"name": name, **fields}
        )
        assert r.status_code == 202, r.text
        dataset_id = r.json()["dataset_id"]

        async def decided() -> dict[str, Any] | None:
            r = await http.get(f"/api/datasets/{dataset_id}")
            body: dict[str, Any] = r.json()
            return body if body["status"] != "validating" else None

        body = await wait_for(decided, timeout=300, what=f"dataset {name} validated")
        assert body["status"] == "validated", body
    p.datasets[name] = dataset_id
    return dataset_id


async def every_item(http: httpx.AsyncClient, url: str, **params: Any) -> list[Any]:
    """Every item of a list route, following its pages' ``next_offset``."""
    found: list[Any] = []
    offset: int | None = 0
    while offset is not None:
        r = await http.get(url, params={**params, "offset": offset})
        assert r.status_code == 200, r.text
        page = r.json()
        found += page["items"]
        offset = page["next_offset"]
    return found


async def job_arrays(
    p: Platform, config: dict[str, Any]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A job's training data (the union of its shards, in shard order) and its holdout,
    as the peers and the aggregator read them (``read_samples``): ``x, y, holdout_x,
    holdout_y``; images kept as pixels are standardised as they standardise them (no
    augmentation). For the central baselines of tests and benchmarks."""
    async with BlobStore(ServiceSettings(s3_bucket=p.bucket).blob_store_config()) as blobs:
        parts = [read_samples(await blobs.get_bytes(s["key"])) for s in config["shards"]]
        hx, hy = read_samples(await blobs.get_bytes(config["holdout"]["key"]))
    x = torch.cat([a for a, _ in parts])
    inputs = Inputs.of(FeatureSpec.model_validate(config["feature_spec"]))
    if inputs is not None:
        x, hx = inputs(x), inputs(hx)
    return x, torch.cat([b for _, b in parts]), hx, hy


def instances_metric(p: Platform, service: str, name: str, **labels: str) -> float:
    """A sample of ``/metrics`` summed over the running instances of ``service``
    (``orchestrator``, ``orchestrator-2``, ...); 0 where absent."""
    total = 0.0
    for key, process in p.services.items():
        if key.partition("-")[0] != service or process.proc is None:
            continue  # another service, or an instance a test stopped
        text = httpx.get(process.base_url + "/metrics", timeout=10).text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and all(
                    sample.labels.get(k) == v for k, v in labels.items()
                ):
                    total += float(sample.value)
    return total


async def job_events(http: httpx.AsyncClient, job_id: str) -> list[dict[str, Any]]:
    """A job's lineage, every page of it."""
    return await every_item(http, f"/api/jobs/{job_id}/events")


async def peers_active(p: Platform, peer_ids: list[str]) -> None:
    """Wait until the registry sees these peers active and the orchestrator has them
    online (it folds ``peer.went_online`` from its queue): a dry-run job naming them on
    the platform's latest dataset is no longer refused as ``peers_unavailable``. Before
    any dataset is uploaded only the registry can be asked: a job created then retries
    on ``peers_unavailable`` itself, as :func:`create_job` does."""
    async with p.client() as http:

        async def active() -> bool:
            r = await http.get("/api/registry/peers", params={"status": "active", "limit": 1000})
            seen = {x["peer_id"] for x in r.json()["items"]} if r.status_code == 200 else set()
            return set(peer_ids) <= seen

        await wait_for(active, timeout=120, what=f"peers {peer_ids} active")
        if not p.datasets:
            return
        probe = {"name": "peers-seen", "dataset_id": [*p.datasets.values()][-1], "peers": peer_ids}

        async def online() -> bool:
            r = await http.post("/api/jobs", params={"dry_run": "true"}, json=probe)
            if r.status_code == 409 and r.json()["error"]["code"] == "peers_unavailable":
                return False
            # 422: what the orchestrator checks after the peers (the probe's default model)
            assert r.status_code in (200, 422), r.text
            return True

        await wait_for(online, timeout=60, what=f"the orchestrator sees {peer_ids} online")


async def create_job(p: Platform, body: dict[str, Any]) -> str:
    async with p.client() as http:

        async def created() -> str | None:
            r = await http.post("/api/jobs", json=body)
            if r.status_code == 409 and r.json()["error"]["code"] == "peers_unavailable":
                return None  # the orchestrator has not seen them online yet
            assert r.status_code == 201, r.text
            return str(r.json()["job_id"])

        job_id: str = await wait_for(created, timeout=60, what="job created", every=1.0)
        return job_id


async def finished(p: Platform, job_id: str, *, timeout: float = 900) -> dict[str, Any]:
    async with p.client() as http:

        async def done() -> dict[str, Any] | None:
            r = await http.get(f"/api/jobs/{job_id}")
            assert r.status_code == 200, r.text
            body: dict[str, Any] = r.json()
            return body if body["state"] in ("completed", "failed", "cancelled") else None

        result: dict[str, Any] = await wait_for(done, timeout=timeout, what=f"job {job_id} ended")
        return result


async def final_weights(p: Platform, job_id: str) -> dict[str, torch.Tensor]:
    async with p.client() as http:
        r = await http.get(f"/api/models/{job_id}/final", params={"format": "safetensors"})
        assert r.status_code == 200, r.text
        return dict(load_safetensors(r.content))


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
