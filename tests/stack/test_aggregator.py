"""The aggregator on the real stack: model versions from the orchestrator's events and
peers' updates, validation, evaluation, export, and the HTTP API through the gateway.

The aggregator runs as a subprocess (``python -m peertrain.aggregator``) with a bucket
and queues of its own (see ``peertrain.testkit.aggregator``). The test plays the
orchestrator (appending ``job:<id>`` events, published by a relay run here) and the
peers (uploading updates to the bucket and announcing them on the telemetry exchange
with a real peer token from the auth service).
"""

from __future__ import annotations

import hashlib
import io
import pickle
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aio_pika
import httpx
import numpy as np
import pytest
import torch

from peertrain.aggregator.config import AggregatorSettings
from peertrain.aggregator.usecases.numerics import RoundWork
from peertrain.common.blobs import BlobStore
from peertrain.common.bus import TELEMETRY, OutboxRelay, make_broker
from peertrain.common.eventlog import EventLog
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.datasets import ArtifactRef, ColumnEncoding, FeatureSpec
from peertrain.common.events.models import (
    MODEL_EVALUATED,
    MODEL_EXPORTED,
    MODEL_VERSION_CREATED,
    UPDATE_ACCEPTED,
    UPDATE_REJECTED,
    model_stream,
)
from peertrain.common.events.tasks import UpdateAnnounced
from peertrain.common.events.training import (
    IncludedUpdate,
    JobConfigured,
    JobCreated,
    RoundClosed,
    RoundOpened,
    ShardPlan,
    TaskAssigned,
    job_stream,
    update_key,
)
from peertrain.common.security import peer_headers
from peertrain.common.settings import ServiceSettings
from peertrain.ml.weights import state_from_bytes, state_to_bytes
from peertrain.testkit.aggregator import GATEWAY_URL, running_aggregator_service
from peertrain.testkit.auth import AuthUnderTest, shared_auth_service
from peertrain.testkit.common import GATEWAY

pytestmark = pytest.mark.stack

AUTH = f"{GATEWAY}/api/auth"
FEATURES = FeatureSpec(
    kind="table",
    input_shape=(6,),
    input_size=6,
    classes=("a", "b", "c"),
    columns=tuple(
        ColumnEncoding(name=f"x{i}", type="numeric", offset=i, width=1, fill=0, mean=0, std=1)
        for i in range(6)
    ),
    label_column="y",
)
ROWS = (40, 60, 10, 10, 10, 10)
"""Shards 0 and 1 send good updates; 2..5 send bad ones."""


@pytest.fixture(scope="module")
def auth(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthUnderTest]:
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as svc:
        yield svc


@pytest.fixture(scope="module")
def service(
    auth: AuthUnderTest, run_id: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with running_aggregator_service(
        mongo_db=auth.mongo_db, run=run_id, base_dir=tmp_path_factory.getbasetemp()
    ) as (_, bucket):
        yield bucket


@pytest.fixture
async def blobs(service: str) -> AsyncIterator[BlobStore]:
    async with BlobStore(AggregatorSettings(s3_bucket=service).blob_store_config()) as store:
        yield store


@pytest.fixture
async def orchestrator(auth: AuthUnderTest, mongo: Any, settings: Any) -> AsyncIterator[EventLog]:
    """The event log, with a relay publishing what this test appends as the orchestrator."""
    log = EventLog(mongo[auth.mongo_db])
    broker = make_broker(settings.amqp_url.get_secret_value())
    await broker.connect()
    relay = OutboxRelay(log, broker, producer="orchestrator")
    relay.start()
    try:
        yield log
    finally:
        await relay.stop()
        await broker.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _user(http: httpx.Client) -> tuple[str, str]:
    name, password = f"a{uuid.uuid4().hex[:12]}", f"pass {uuid.uuid4().hex}"
    r = http.post(f"{AUTH}/register", json={"username": name, "password": password})
    assert r.status_code == 201, r.text
    user_id = str(r.json()["id"])
    r = http.post(f"{AUTH}/token", data={"username": name, "password": password})
    assert r.status_code == 200, r.text
    return user_id, str(r.json()["access_token"])


def _peer(http: httpx.Client, owner_token: str) -> tuple[str, str]:
    """Enroll a peer (identity only, no runtime): its id and an access token."""
    r = http.post(f"{AUTH}/peer-enrollments", headers=bearer(owner_token))
    assert r.status_code == 201, r.text
    r = http.post(
        f"{AUTH}/peers/enroll",
        json={"enrollment_token": r.json()["enrollment_token"], "name": uuid.uuid4().hex[:8]},
    )
    assert r.status_code == 201, r.text
    creds = r.json()
    r = http.post(
        f"{AUTH}/peers/token",
        json={"peer_id": creds["peer_id"], "peer_secret": creds["peer_secret"]},
    )
    assert r.status_code == 200, r.text
    return str(creds["peer_id"]), str(r.json()["access_token"])


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _holdout() -> bytes:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=90).astype(np.int64)
    x = (rng.normal(size=(90, 6)) + y[:, None]).astype(np.float32)
    buf = io.BytesIO()
    np.savez(buf, X=x, y=y)
    return buf.getvalue()


def _delta(base: dict[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {k: torch.randn(v.shape, generator=g, dtype=v.dtype) * 0.05 for k, v in base.items()}


class Job:
    """Plays the orchestrator for one job, and its peers."""

    def __init__(self, log: EventLog, blobs: BlobStore, peers: list[tuple[str, str]]) -> None:
        self.log, self.blobs, self.peers = log, blobs, peers
        self.id = uuid.uuid4().hex
        self.version = 0

    async def append(self, *data: EventData) -> None:
        events = [NewEvent.of(d, producer="orchestrator", correlation_id=self.id) for d in data]
        await self.log.append(job_stream(self.id), events, expected_version=self.version)
        self.version += len(events)

    async def model_events(self, type_: str | None = None) -> list[RecordedEvent]:
        events = await self.log.read_stream(model_stream(self.id))
        return [e for e in events if type_ is None or e.type == type_]

    def task(self, round_: int, shard: int, peer: int) -> TaskAssigned:
        peer_id = self.peers[peer][0]
        return TaskAssigned(
            job_id=self.id,
            task_id=f"{self.id}.{round_}.1.{shard}.1",
            round=round_,
            attempt=1,
            shard=shard,
            peer_id=peer_id,
            update_key=update_key(self.id, round_, 1, shard, peer_id),
            deadline=datetime.now(UTC) + timedelta(minutes=10),
        )

    async def upload(self, task: TaskAssigned, data: bytes) -> UpdateAnnounced:
        await self.blobs.put_bytes(task.update_key, data)
        return UpdateAnnounced(
            task_id=task.task_id,
            job_id=self.id,
            round=task.round,
            attempt=task.attempt,
            shard=task.shard,
            key=task.update_key,
            sha256=_sha(data),
            size=len(data),
            samples=100_000,
            train_loss=0.5,
        )

    async def announce(self, peer: int, body: UpdateAnnounced) -> None:
        peer_id, token = self.peers[peer]
        conn = await aio_pika.connect(ServiceSettings().amqp_url.get_secret_value())
        async with conn:
            channel = await conn.channel()
            exchange = await channel.get_exchange(TELEMETRY.name)
            await exchange.publish(
                aio_pika.Message(
                    body.model_dump_json().encode(), headers=dict(peer_headers(token))
                ),
                routing_key=f"peer.{peer_id}.update",
            )

    async def open_round(self, round_: int, tasks: list[TaskAssigned]) -> None:
        created = [e for e in await self.model_events(MODEL_VERSION_CREATED)]
        base = next(e.data for e in created if e.data.version == round_ - 1)  # type: ignore[attr-defined]
        opened = RoundOpened(
            job_id=self.id,
            round=round_,
            attempt=1,
            model_version=round_ - 1,
            model_key=base.key,
            model_sha256=base.sha256,
            deadline=datetime.now(UTC) + timedelta(minutes=10),
        )
        await self.append(opened, *tasks)

    async def close_round(
        self, round_: int, shards: tuple[int, ...] | None = None
    ) -> tuple[IncludedUpdate, ...]:
        accepted = [e.data for e in await self.model_events(UPDATE_ACCEPTED)]
        included = tuple(
            IncludedUpdate(
                shard=a.shard, peer_id=a.peer_id, task_id=a.task_id, key=a.key, sha256=a.sha256
            )
            for a in accepted
            if a.round == round_  # type: ignore[attr-defined]
            and (shards is None or a.shard in shards)  # type: ignore[attr-defined]
        )
        await self.append(
            RoundClosed(
                job_id=self.id, round=round_, attempt=1, reason="complete", included=included
            )
        )
        return included


async def test_a_job_through_two_rounds(
    auth: AuthUnderTest,
    service: str,
    blobs: BlobStore,
    orchestrator: EventLog,
    eventually: Callable[..., Any],
    tmp_path: Path,
) -> None:
    with httpx.Client(timeout=30) as http:
        owner_id, owner_token = _user(http)
        _, stranger_token = _user(http)
        peers = [_peer(http, owner_token), _peer(http, owner_token)]
        r = http.post(
            f"{AUTH}/token", data={"username": auth.admin_username, "password": auth.admin_password}
        )
        admin_token = str(r.json()["access_token"])
    job = Job(orchestrator, blobs, peers)
    holdout = _holdout()
    holdout_key = f"jobs/{job.id}/holdout.npz"
    await blobs.put_bytes(holdout_key, holdout)
    cfg = JobConfigured(
        job_id=job.id,
        config_key=f"jobs/{job.id}/config.json",
        config_sha256="0" * 64,
        rounds=2,
        model={"arch": "mlp", "hidden": [16]},
        training={"seed": 7, "lr": 0.1},
        aggregation={"strategy": "fedavg", "max_update_norm": 10.0},
        feature_spec=FEATURES,
        shards=tuple(
            ShardPlan(
                index=i,
                peer_id=peers[i % 2][0],
                key=f"jobs/{job.id}/shards/{i}.npz",
                sha256="0" * 64,
                size=1,
                rows=r,
            )
            for i, r in enumerate(ROWS)
        ),
        holdout=ArtifactRef(key=holdout_key, sha256=_sha(holdout), size=len(holdout)),
        reference_weight=float(sum(ROWS)),
    )
    job_created = JobCreated(
        job_id=job.id,
        owner_id=owner_id,
        name="agg",
        dataset_id="d",
        peers=(peers[0][0], peers[1][0]),
    )
    await job.append(job_created, cfg)

    # -- v0 ------------------------------------------------------------------------
    async def evaluated(n: int) -> list[RecordedEvent] | None:
        events = await job.model_events(MODEL_EVALUATED)
        return events if len(events) >= n else None

    await eventually(lambda: evaluated(1), timeout=60, what="v0 evaluated")
    (v0_event,) = await job.model_events(MODEL_VERSION_CREATED)
    v0 = v0_event.data
    assert v0.version == 0 and v0.key == f"models/{job.id}/v0.safetensors"  # type: ignore[attr-defined]
    v0_bytes = await blobs.get_bytes(v0.key)  # type: ignore[attr-defined]
    assert _sha(v0_bytes) == v0.sha256  # type: ignore[attr-defined]
    base = state_from_bytes(v0_bytes)

    async with httpx.AsyncClient(base_url=GATEWAY_URL, timeout=30) as api:
        r = await api.get(f"/{job.id}/final", headers=bearer(owner_token))
        assert r.status_code == 409 and r.json()["error"]["code"] == "final_not_exported"
        r = await api.get(f"/{job.id}/final?format=zip", headers=bearer(owner_token))
        assert r.status_code == 422, r.text

    # -- round 1: two good updates, four bad ones, a spoof and a duplicate -----------
    tasks = [job.task(1, shard, shard % 2) for shard in range(6)]
    await job.open_round(1, tasks)
    good = [_delta(base, 1), _delta(base, 2)]
    nan = _delta(base, 3)
    next(iter(nan.values())).view(-1)[0] = float("nan")
    wrong_shape = {k: torch.zeros(2, 2) for k in base}
    too_large = {k: v * 1000 for k, v in _delta(base, 4).items()}
    bodies = [
        await job.upload(tasks[0], state_to_bytes(good[0])),
        await job.upload(tasks[1], state_to_bytes(good[1])),
        await job.upload(tasks[2], state_to_bytes(nan)),
        await job.upload(tasks[3], state_to_bytes(wrong_shape)),
        await job.upload(tasks[4], state_to_bytes(too_large)),
        await job.upload(tasks[5], pickle.dumps(good[0])),
    ]
    await job.announce(1, bodies[0])  # peer 1 names peer 0's task: refused, not blocking
    for shard in range(6):
        await job.announce(shard % 2, bodies[shard])
    await job.announce(0, bodies[0])  # a duplicate announcement

    async def decided() -> bool:
        events = await job.model_events()
        return sum(e.type in (UPDATE_ACCEPTED, UPDATE_REJECTED) for e in events) >= 7

    await eventually(decided, timeout=60, what="round 1 decisions")
    rejected = {e.data.code: e.data for e in await job.model_events(UPDATE_REJECTED)}  # type: ignore[attr-defined]
    assert set(rejected) == {
        "wrong_peer",
        "non_finite",
        "wrong_tensors",
        "norm_too_large",
        "not_safetensors",
    }, rejected
    assert all(r.reason for r in rejected.values())
    assert rejected["wrong_peer"].peer_id == peers[1][0]
    accepted = [e.data for e in await job.model_events(UPDATE_ACCEPTED)]
    assert sorted(a.shard for a in accepted) == [0, 1]  # type: ignore[attr-defined]
    assert {a.shard: a.weight for a in accepted} == {0: 40.0, 1: 60.0}  # type: ignore[attr-defined]

    included = await job.close_round(1)
    await eventually(lambda: evaluated(2), timeout=60, what="v1 evaluated")
    created = await job.model_events(MODEL_VERSION_CREATED)
    v1 = created[1].data
    assert v1.version == 1 and v1.lineage.parent_version == 0  # type: ignore[attr-defined]
    assert sorted(v1.lineage.shards) == [0, 1]  # type: ignore[attr-defined]
    # bit-identical to folding the same set here, in another order
    work = RoundWork.begin(cfg, 1, 1, base, server_state=None, spill_dir=tmp_path)
    for delta, weight in ((good[1], 60.0), (good[0], 40.0)):
        work.accumulator.add(delta, weight)
    expected_v1 = state_to_bytes(work.accumulator.finish())
    assert v1.sha256 == _sha(expected_v1)  # type: ignore[attr-defined]
    assert len(included) == 2

    # -- round 2 and the export -----------------------------------------------------
    base1 = state_from_bytes(expected_v1)
    tasks2 = [job.task(2, 0, 0), job.task(2, 1, 1)]
    await job.open_round(2, tasks2)
    deltas2 = [_delta(base1, 10 + i) for i in range(2)]
    for i, t in enumerate(tasks2):
        await job.announce(i, await job.upload(t, state_to_bytes(deltas2[i])))

    async def accepted2() -> bool:
        return len(await job.model_events(UPDATE_ACCEPTED)) >= 4

    await eventually(accepted2, timeout=60, what="round 2 updates accepted")
    # the round closes with shard 0 only: the running sum holds more, so the aggregator
    # folds exactly the included update again from the bucket
    await job.close_round(2, shards=(0,))

    async def exported() -> list[RecordedEvent]:
        return await job.model_events(MODEL_EXPORTED)

    await eventually(exported, timeout=60, what="final export")
    types = [e.type for e in await job.model_events()]
    assert types.count(MODEL_VERSION_CREATED) == 3 and types.count(MODEL_EVALUATED) == 3
    assert types.count(UPDATE_ACCEPTED) == 4
    v2_event = (await job.model_events(MODEL_VERSION_CREATED))[2].data
    work = RoundWork.begin(cfg, 2, 1, base1, server_state=None, spill_dir=tmp_path)
    work.accumulator.add(deltas2[0], 40.0)
    assert v2_event.sha256 == _sha(state_to_bytes(work.accumulator.finish()))  # type: ignore[attr-defined]
    assert v2_event.lineage.shards == (0,)  # type: ignore[attr-defined]

    # -- HTTP -------------------------------------------------------------------------
    async with httpx.AsyncClient(base_url=GATEWAY_URL, timeout=30) as api:
        r = await api.get(f"/{job.id}", headers=bearer(owner_token))
        assert r.status_code == 200, r.text
        body = r.json()
        assert [v["version"] for v in body["versions"]] == [0, 1, 2]
        assert all(v["evaluation"]["samples"] == 90 for v in body["versions"])
        assert body["final_available"] is True and body["latest_version"] == 2
        assert (await api.get(f"/{job.id}", headers=bearer(admin_token))).status_code == 200
        r = await api.get(f"/{job.id}", headers=bearer(stranger_token))
        assert r.status_code == 404 and r.json()["error"]["code"] == "job_not_found"
        r = await api.get(f"/{job.id}/final", headers=bearer(stranger_token))
        assert r.status_code == 404
        r = await api.get(f"/{uuid.uuid4().hex}", headers=bearer(owner_token))
        assert r.status_code == 404
        r = await api.get(f"/{job.id}/final", params={"format": "pt"}, headers=bearer(owner_token))
        assert r.status_code == 200, r.text
        payload = torch.load(io.BytesIO(r.content), weights_only=True)
        assert set(payload) == {"format", "spec", "feature_spec", "architecture", "state_dict"}
        v2 = state_from_bytes(await blobs.get_bytes(f"models/{job.id}/v2.safetensors"))
        assert all(torch.equal(payload["state_dict"][k], v2[k]) for k in v2)
        r = await api.get(
            f"/{job.id}/final", params={"format": "safetensors"}, headers=bearer(owner_token)
        )
        assert r.status_code == 200
        assert state_from_bytes(r.content).keys() == v2.keys()
