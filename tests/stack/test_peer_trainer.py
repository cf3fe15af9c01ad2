"""The peer's trainer against the real MinIO, in-process and without the broker.

A model v0 and a shard go into MinIO; tasks carry presigned URLs as the orchestrator's
would; the trainer runs with a ``send`` that collects what it would publish.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import io
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel
from sklearn.datasets import load_digits

from peertrain.common.blobs import BlobStore, BlobStoreConfig
from peertrain.common.events.tasks import (
    ACCEPTED,
    FAILED,
    PROGRESS,
    UPDATE,
    Download,
    TaskFailedBody,
    TaskMessage,
    TaskProgressBody,
    UpdateAnnounced,
    UploadForm,
)
from peertrain.common.settings import ServiceSettings
from peertrain.ml.errors import NotSafetensors, UpdateInvalid
from peertrain.ml.weights import load_update, state_from_bytes, state_to_bytes
from peertrain.ml.zoo import build_model
from peertrain.peer.trainer import Trainer
from peertrain.peer.worker import Worker, WorkItem
from peertrain.testkit.common.features import table_features

pytestmark = pytest.mark.stack

SPEC = {"arch": "mlp", "hidden": [16]}
FEATURES = table_features(64, 10)
MAX_NORM = 50.0
HOSTILE = Path(__file__).with_name("hostile_peer.py")


class Collector:
    """A thread-safe ``send`` that keeps (kind, body) pairs."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, BaseModel]] = []
        self._lock = threading.Lock()

    def __call__(self, kind: str, body: BaseModel) -> None:
        with self._lock:
            self.sent.append((kind, body))

    def kinds(self) -> list[str]:
        with self._lock:
            return [k for k, _ in self.sent]

    def of(self, kind: str) -> list[Any]:
        with self._lock:
            return [b for k, b in self.sent if k == kind]


@dataclass(frozen=True)
class Job:
    prefix: str
    model: Download
    data: Download
    v0: bytes


def _download(key: str, data: bytes, url: str) -> Download:
    return Download(url=url, sha256=hashlib.sha256(data).hexdigest(), size=len(data), key=key)


@pytest.fixture(scope="module")
async def blobs(settings: ServiceSettings) -> AsyncIterator[BlobStore]:
    config = BlobStoreConfig(
        endpoint_url=settings.s3_endpoint_url,
        access_key=settings.s3_access_key,
        secret_key=settings.s3_secret_key,
        region=settings.s3_region,
        bucket=settings.s3_bucket,
    )
    async with BlobStore(config) as store:
        await store.ensure_bucket()
        yield store


@pytest.fixture(scope="module")
async def job(blobs: BlobStore, run_id: str) -> AsyncIterator[Job]:
    prefix = f"test-peer-trainer/{run_id}/{uuid.uuid4().hex[:6]}/"
    v0 = state_to_bytes(build_model(SPEC, FEATURES).state_dict())
    digits = load_digits()
    buf = io.BytesIO()
    np.savez(buf, X=(digits.data / 16).astype(np.float32), y=digits.target.astype(np.int64))
    shard = buf.getvalue()
    model_key, shard_key = f"{prefix}models/v0.safetensors", f"{prefix}shards/0.npz"
    await blobs.put_bytes(model_key, v0)
    await blobs.put_bytes(shard_key, shard)
    yield Job(
        prefix=prefix,
        model=_download(model_key, v0, await blobs.presigned_get(model_key, expires_s=3600)),
        data=_download(shard_key, shard, await blobs.presigned_get(shard_key, expires_s=3600)),
        v0=v0,
    )
    await blobs.delete_prefix(prefix)


async def make_task(blobs: BlobStore, job: Job, *, epochs: int = 2, **changes: Any) -> TaskMessage:
    task_id = changes.pop("task_id", uuid.uuid4().hex)
    key = f"{job.prefix}rounds/1/updates/{task_id}.safetensors"
    form = await blobs.presigned_post(key, max_bytes=1 << 20, expires_s=3600)
    values: dict[str, Any] = {
        "task_id": task_id,
        "job_id": "job-" + job.prefix.rsplit("/", 2)[-2],
        "round": 1,
        "attempt": 1,
        "shard": 0,
        "deadline": datetime.now(UTC) + timedelta(minutes=10),
        "model_version": 0,
        "model": job.model,
        "data": job.data,
        "upload": UploadForm(url=form["url"], fields=form["fields"], key=key, max_bytes=1 << 20),
        "model_spec": SPEC,
        "feature_spec": FEATURES,
        "training": {"local_epochs": epochs, "batch_size": 32, "lr": 0.05},
        "seed": 7,
    }
    values.update(changes)
    return TaskMessage(**values)


def make_trainer(
    tmp: Path, cls: type[Trainer] = Trainer, **options: Any
) -> tuple[Trainer, Collector]:
    sent = Collector()
    return cls(sent, cache_dir=tmp / "cache", threads=2, device="cpu", **options), sent


async def test_a_task_is_accepted_trained_uploaded_and_announced(
    blobs: BlobStore, job: Job, tmp_path: Path
) -> None:
    trainer, sent = make_trainer(tmp_path, progress_every_s=0)  # a report per epoch
    task = await make_task(blobs, job, epochs=3)
    announced = await asyncio.to_thread(trainer.run, task)
    assert sent.kinds() == [ACCEPTED, PROGRESS, PROGRESS, PROGRESS, UPDATE]
    progress: list[TaskProgressBody] = sent.of(PROGRESS)
    assert [(p.epoch, p.epochs) for p in progress] == [(1, 3), (2, 3), (3, 3)]
    assert all(p.earlier == () for p in progress)
    assert all(p.samples == 1797 and p.task_id == task.task_id for p in progress)
    [update] = sent.of(UPDATE)
    assert update == announced and isinstance(update, UpdateAnnounced)
    assert update.key == task.upload.key and update.samples == 1797
    assert update.train_loss is not None and update.train_loss < progress[0].loss

    data = await blobs.get_bytes(task.upload.key)
    assert hashlib.sha256(data).hexdigest() == update.sha256 and len(data) == update.size
    delta = load_update(data, state_from_bytes(job.v0), max_norm=MAX_NORM)
    assert set(delta) == set(state_from_bytes(job.v0))

    # The same task delivered again: the update is announced again, nothing rerun.
    again = await asyncio.to_thread(trainer.run, task)
    assert again == update
    assert sent.kinds()[-1] == UPDATE and sent.kinds().count(ACCEPTED) == 1
    trainer.close()


async def test_a_tasks_fast_epochs_go_out_in_one_progress_report(
    blobs: BlobStore, job: Job, tmp_path: Path
) -> None:
    """Epochs quicker than the report interval (an hour here) wait for the last one:
    one report of the three, each epoch's figures in it."""
    trainer, sent = make_trainer(tmp_path, progress_every_s=3600)
    task = await make_task(blobs, job, epochs=3)
    assert await asyncio.to_thread(trainer.run, task) is not None
    assert sent.kinds() == [ACCEPTED, PROGRESS, UPDATE]
    [report] = sent.of(PROGRESS)
    assert isinstance(report, TaskProgressBody) and (report.epoch, report.epochs) == (3, 3)
    epochs = [*report.earlier, report]
    assert [e.epoch for e in epochs] == [1, 2, 3] and all(e.samples == 1797 for e in epochs)
    assert epochs[0].loss is not None and report.loss is not None and report.loss < epochs[0].loss
    trainer.close()


async def test_a_wrong_sha256_fails_the_task_with_a_reason(
    blobs: BlobStore, job: Job, tmp_path: Path
) -> None:
    trainer, sent = make_trainer(tmp_path)
    bad = job.data.model_copy(update={"sha256": "0" * 64})
    task = await make_task(blobs, job, data=bad)
    assert await asyncio.to_thread(trainer.run, task) is None
    assert sent.kinds() == [ACCEPTED, FAILED]
    [failed] = sent.of(FAILED)
    assert isinstance(failed, TaskFailedBody)
    assert "sha256" in failed.error and "ChecksumMismatch" in failed.error
    assert "Traceback" in failed.traceback
    assert trainer.cache.files() == []  # nothing unchecked is kept
    assert not await blobs.exists(task.upload.key)
    trainer.close()


async def test_a_cancel_stops_the_running_task_and_drops_queued_ones(
    blobs: BlobStore, job: Job, tmp_path: Path
) -> None:
    trainer, sent = make_trainer(tmp_path)
    worker = Worker(trainer)
    worker.start()
    try:
        task = await make_task(blobs, job, epochs=500)
        queued = await make_task(blobs, job, epochs=1)
        for t in (task, queued):
            worker.submit(WorkItem("peer.p.task", t.model_dump_json().encode()))
        deadline = time.monotonic() + 60
        while PROGRESS not in sent.kinds() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert PROGRESS in sent.kinds()
        cancel = {"type": "cancel", "job_id": task.job_id, "reason": "test"}
        worker.submit(WorkItem("peer.p.cancel", json.dumps(cancel).encode()))
        while trainer.running_task() is not None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert trainer.running_task() is None and worker.backlog == 0
        await asyncio.sleep(0.3)
    finally:
        worker.stop()
        trainer.close()
    kinds = sent.kinds()
    assert UPDATE not in kinds and FAILED not in kinds
    assert kinds.count(ACCEPTED) == 1 and kinds.count(PROGRESS) < 500
    assert not await blobs.exists(task.upload.key)
    assert not await blobs.exists(queued.upload.key)
    # A cancelled task delivered again is dropped.
    assert await asyncio.to_thread(trainer.run, task) is None
    assert sent.kinds() == kinds


async def test_a_later_round_reuses_the_cached_shard(
    blobs: BlobStore, job: Job, tmp_path: Path
) -> None:
    trainer, sent = make_trainer(tmp_path)
    first = await make_task(blobs, job, epochs=1)
    assert await asyncio.to_thread(trainer.run, first) is not None
    assert [p.name for p in trainer.cache.files()] == [f"{job.data.sha256}.npz"]
    # The shard's URL now leads nowhere: only the cache can serve it.
    gone = job.data.model_copy(update={"url": "http://127.0.0.1:9/gone"})
    second = await make_task(blobs, job, epochs=1, data=gone, round=2)
    announced = await asyncio.to_thread(trainer.run, second)
    assert announced is not None, sent.of(FAILED)
    assert trainer.cache.hits == 1
    trainer.close()


def _hostile() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hostile_peer", HOSTILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mode", ["nan", "shape", "norm", "pickle"])
async def test_hostile_updates_are_uploaded_and_refused_by_load_update(
    mode: str, blobs: BlobStore, job: Job, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = tmp_path / "canary"
    monkeypatch.setenv("PEERTRAIN_TEST_CANARY", str(canary))
    trainer, sent = make_trainer(tmp_path, _hostile().MODES[mode])
    task = await make_task(blobs, job, epochs=1)
    assert await asyncio.to_thread(trainer.run, task) is not None, sent.of(FAILED)
    data = await blobs.get_bytes(task.upload.key)
    expected = NotSafetensors if mode == "pickle" else UpdateInvalid
    with pytest.raises(expected):
        load_update(data, state_from_bytes(job.v0), max_norm=MAX_NORM)
    assert not canary.exists()
    trainer.close()


async def test_the_duplicate_mode_announces_twice(
    blobs: BlobStore, job: Job, tmp_path: Path
) -> None:
    trainer, sent = make_trainer(tmp_path, _hostile().MODES["duplicate"])
    task = await make_task(blobs, job, epochs=1)
    await asyncio.to_thread(trainer.run, task)
    updates = sent.of(UPDATE)
    assert len(updates) == 2 and updates[0] == updates[1]
    load_update(await blobs.get_bytes(task.upload.key), state_from_bytes(job.v0))
    trainer.close()
