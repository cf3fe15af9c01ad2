"""``GET /api/models/{job}/versions/{n|best}``: the routes on the aggregator's application,
its log and bucket in memory (no stack needed)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient

from peertrain.aggregator.api.deps import get_aggregator
from peertrain.aggregator.api.routes.models import router
from peertrain.aggregator.application import AggregatorApp
from peertrain.aggregator.config import AggregatorSettings
from peertrain.aggregator.usecases.numerics import final_files, initial_state, load_state
from peertrain.common.app import Ports, install_error_handlers
from peertrain.common.blobs import MemoryBlobStore
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events.models import ModelEvaluated, ModelExported, ModelVersionCreated
from peertrain.common.events.training import JobCreated
from peertrain.common.leases import SoleInstance
from peertrain.common.security import Principal
from peertrain.common.security.deps import get_user
from peertrain.ml.export import load
from peertrain.ml.zoo import build_model

from .conftest import JOB, configured, record


def _weights(seed: int) -> bytes:
    cfg = configured().model_copy(
        update={"training": configured().training.model_copy(update={"seed": seed})}
    )
    return initial_state(cfg)


async def _stored(*, evaluated: bool = True) -> tuple[AggregatorApp, dict[int, bytes]]:
    """Versions 0..2 stored (accuracy 0.5, 0.8, 0.6 unless not ``evaluated``); version 2
    exported as final: the aggregator's log and bucket, in memory."""
    log, bucket = MemoryEventLog(), MemoryBlobStore()
    cfg = configured(rounds=2)
    await record(
        log,
        JobCreated(job_id=JOB, owner_id="u1", name="iris run", dataset_id="d", peers=("p0", "p1")),
    )
    await record(log, cfg)
    stored = {n: _weights(n) for n in range(3)}
    for n, data in stored.items():
        key = f"models/{JOB}/v{n}.safetensors"
        await bucket.put_bytes(key, data)
        sha = hashlib.sha256(data).hexdigest()
        created = ModelVersionCreated(
            job_id=JOB, version=n, key=key, sha256=sha, size=len(data), strategy="fedavg"
        )
        await record(log, created, model=True)
        if evaluated:
            accuracy = (0.5, 0.8, 0.6)[n]
            done = ModelEvaluated(job_id=JOB, version=n, loss=1.0, accuracy=accuracy, samples=10)
            await record(log, done, model=True)
    pt, st = final_files(cfg, load_state(stored[2]))
    await bucket.put_bytes("final.pt", pt)
    await bucket.put_bytes("final.safetensors", st)
    exported = ModelExported(
        job_id=JOB,
        version=2,
        pt_key="final.pt",
        pt_sha256=hashlib.sha256(pt).hexdigest(),
        safetensors_key="final.safetensors",
        safetensors_sha256=hashlib.sha256(st).hexdigest(),
    )
    await record(log, exported, model=True)
    ports = Ports(log=log, blobs=bucket, leases=SoleInstance())
    return AggregatorApp(ports, AggregatorSettings()), stored


@pytest.fixture
async def job() -> tuple[AggregatorApp, dict[int, bytes]]:
    """See :func:`_stored`."""
    return await _stored()


def _client(aggregator: AggregatorApp, subject: str = "u1") -> Iterator[TestClient]:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(router, prefix="/api/models")
    app.dependency_overrides[get_aggregator] = lambda: aggregator
    app.dependency_overrides[get_user] = lambda: Principal(
        subject=subject, roles=frozenset({"user"}), token_id="t", issued_at=0, expires_at=0
    )
    with TestClient(app) as client:
        yield client


@pytest.fixture
def api(job: tuple[AggregatorApp, dict[int, bytes]]) -> Iterator[TestClient]:
    yield from _client(job[0])


def _same_weights(file: bytes, version: bytes) -> bool:
    """``load`` (what ``peertrain predict`` uses) rebuilds the model with the version's
    tensors (its plain form names them differently: compared in module order)."""
    model, _ = load(file)
    zoo = build_model(configured().model, configured().feature_spec)
    zoo.load_state_dict(load_state(version))
    got, expected = list(model.state_dict().values()), list(zoo.state_dict().values())
    return len(got) == len(expected) and all(map(torch.equal, got, expected))


def test_any_version_downloads_as_a_final_pt_with_its_checksum_and_name(api, job):
    r = api.get(f"/api/models/{JOB}/versions/0")
    assert r.status_code == 200
    assert r.headers["x-content-sha256"] == hashlib.sha256(r.content).hexdigest()
    assert r.headers["x-model-version"] == "0"
    assert r.headers["content-length"] == str(len(r.content))
    assert r.headers["content-disposition"] == 'attachment; filename="iris-run-v0.pt"'
    assert _same_weights(r.content, job[1][0])


def test_best_is_the_most_accurate_version_as_safetensors_too(api, job):
    r = api.get(f"/api/models/{JOB}/versions/best", params={"format": "safetensors"})
    assert r.status_code == 200 and r.headers["x-model-version"] == "1"
    assert r.headers["content-disposition"] == 'attachment; filename="iris-run-v1.safetensors"'
    assert _same_weights(r.content, job[1][1])
    assert api.get(f"/api/models/{JOB}").json()["best_version"] == 1


def test_the_final_models_version_is_the_final_file_itself(api, job):
    final = api.get(f"/api/models/{JOB}/final")
    r = api.get(f"/api/models/{JOB}/versions/2")
    assert r.status_code == 200 and r.content == final.content
    assert r.headers["x-content-sha256"] == final.headers["x-content-sha256"]


def test_unknown_versions_and_jobs_answer_404_in_the_one_error_shape(api, job):
    r = api.get(f"/api/models/{JOB}/versions/9")
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "version_not_found"
    assert r.json()["error"]["detail"] == {"version": 9, "versions": [0, 1, 2]}
    r = api.get("/api/models/other/versions/0")
    assert r.status_code == 404 and r.json()["error"]["code"] == "job_not_found"
    assert api.get(f"/api/models/{JOB}/versions/v1").status_code == 422
    assert api.get(f"/api/models/{JOB}/versions/1", params={"format": "zip"}).status_code == 422


def test_another_users_job_is_not_found(job):
    for client in _client(job[0], subject="u2"):
        r = client.get(f"/api/models/{JOB}/versions/best")
        assert r.status_code == 404 and r.json()["error"]["code"] == "job_not_found"


async def test_best_before_any_evaluation_is_a_409():
    aggregator, _ = await _stored(evaluated=False)
    for client in _client(aggregator):
        r = client.get(f"/api/models/{JOB}/versions/best")
        assert r.status_code == 409 and r.json()["error"]["code"] == "no_evaluated_version"
        assert client.get(f"/api/models/{JOB}/versions/1").status_code == 200
