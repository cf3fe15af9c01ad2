"""``GET /api/models/{job}/versions/{n|best}``: the route on a job folded from events,
its versions in a bucket held in memory (no stack needed)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator

import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient

from peertrain.aggregator.api.deps import get_aggregator_context
from peertrain.aggregator.api.routes.models import router
from peertrain.aggregator.domain import JobState
from peertrain.aggregator.usecases.numerics import final_files, initial_state, load_state
from peertrain.common.app import install_error_handlers
from peertrain.common.blobs import BlobNotFound
from peertrain.common.events.models import ModelEvaluated, ModelExported, ModelVersionCreated
from peertrain.common.events.training import JobCreated
from peertrain.common.security import Principal
from peertrain.common.security.deps import get_user
from peertrain.ml.export import load
from peertrain.ml.zoo import build_model

from .conftest import JOB, Log, configured


class Bucket:
    """The two reads the download routes make, from a dict."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    async def get_bytes(self, key: str) -> bytes:
        if key not in self.objects:
            raise BlobNotFound(key)
        return self.objects[key]

    async def get_stream(self, key: str) -> AsyncIterator[bytes]:
        data = await self.get_bytes(key)
        for start in range(0, len(data), 7):
            yield data[start : start + 7]


class Aggregator:
    """What the routes use of ``AggregatorContext``: a job's state and the bucket."""

    def __init__(self, state: JobState, blobs: Bucket) -> None:
        self.state, self.blobs = state, blobs

    async def read_only(self, job_id: str) -> JobState:
        return self.state if job_id == JOB else JobState(job_id)


def _weights(seed: int) -> bytes:
    cfg = configured().model_copy(
        update={"training": configured().training.model_copy(update={"seed": seed})}
    )
    return initial_state(cfg)


@pytest.fixture
def job() -> tuple[Aggregator, dict[int, bytes]]:
    """Versions 0..2 stored (accuracy 0.5, 0.8, 0.6); version 2 exported as final."""
    log, state, bucket = Log(), JobState(JOB), Bucket()
    cfg = configured(rounds=2)
    state.apply(
        log.event(
            JobCreated(
                job_id=JOB, owner_id="u1", name="iris run", dataset_id="d", peers=("p0", "p1")
            )
        )
    )
    state.apply(log.event(cfg))
    stored = {n: _weights(n) for n in range(3)}
    for n, data in stored.items():
        key = f"models/{JOB}/v{n}.safetensors"
        bucket.objects[key] = data
        sha = hashlib.sha256(data).hexdigest()
        created = ModelVersionCreated(
            job_id=JOB, version=n, key=key, sha256=sha, size=len(data), strategy="fedavg"
        )
        state.apply(log.event(created, model=True))
        evaluated = ModelEvaluated(
            job_id=JOB, version=n, loss=1.0, accuracy=(0.5, 0.8, 0.6)[n], samples=10
        )
        state.apply(log.event(evaluated, model=True))
    pt, st = final_files(cfg, load_state(stored[2]))
    bucket.objects.update({"final.pt": pt, "final.safetensors": st})
    exported = ModelExported(
        job_id=JOB,
        version=2,
        pt_key="final.pt",
        pt_sha256=hashlib.sha256(pt).hexdigest(),
        safetensors_key="final.safetensors",
        safetensors_sha256=hashlib.sha256(st).hexdigest(),
    )
    state.apply(log.event(exported, model=True))
    return Aggregator(state, bucket), stored


def _client(actx: Aggregator, subject: str = "u1") -> Iterator[TestClient]:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(router, prefix="/api/models")
    app.dependency_overrides[get_aggregator_context] = lambda: actx
    app.dependency_overrides[get_user] = lambda: Principal(
        subject=subject, roles=frozenset({"user"}), token_id="t", issued_at=0, expires_at=0
    )
    with TestClient(app) as client:
        yield client


@pytest.fixture
def api(job: tuple[Aggregator, dict[int, bytes]]) -> Iterator[TestClient]:
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


def test_best_before_any_evaluation_is_a_409(job):
    actx, _ = job
    for info in actx.state.versions.values():
        info.evaluation = None
    for client in _client(actx):
        r = client.get(f"/api/models/{JOB}/versions/best")
        assert r.status_code == 409 and r.json()["error"]["code"] == "no_evaluated_version"
        assert client.get(f"/api/models/{JOB}/versions/1").status_code == 200
