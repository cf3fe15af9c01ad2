"""The trainer's pure parts: outbox, shard cache, shard loading, transfers, cancels."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import numpy as np
import pytest
from pydantic import BaseModel

from peertrain.common.events.tasks import (
    ACCEPTED,
    FAILED,
    MAX_TRACEBACK,
    PROGRESS,
    CancelMessage,
    Download,
    TaskFailedBody,
    TaskMessage,
    TaskProgressBody,
    UploadForm,
)
from peertrain.peer.cache import ShardCache
from peertrain.peer.config import PeerSettings
from peertrain.peer.errors import ChecksumMismatch, DownloadFailed, ShardInvalid, UploadFailed
from peertrain.peer.listener import Listener
from peertrain.peer.outbox import Outbox
from peertrain.peer.shard import load_shard
from peertrain.peer.trainer import Trainer
from peertrain.peer.transfer import download_to, upload_form
from peertrain.peer.worker import Worker, WorkItem
from peertrain.testkit.common.features import table_features

# -- outbox ---------------------------------------------------------------------------


def test_settings_have_training_knobs() -> None:
    s = PeerSettings(config_dir=Path("/tmp/x"))
    assert s.threads is None and s.device is None and s.cache_max_files >= 1
    with pytest.raises(ValueError):
        PeerSettings(config_dir=Path("/tmp/x"), threads=0)


async def test_outbox_wakes_the_loop_from_another_thread_and_keeps_order() -> None:
    outbox = Outbox()
    waiting = asyncio.create_task(outbox.wait())
    await asyncio.sleep(0)  # one turn of the loop: wait() runs up to its await on the event
    assert not waiting.done()
    threads = [
        threading.Thread(target=outbox.put, args=("progress", f'{{"n": {i}}}'.encode()))
        for i in range(3)
    ]
    for t in threads:
        t.start()
        t.join()
    first = await asyncio.wait_for(waiting, 5)
    assert first.body == b'{"n": 0}'
    seen = []
    while len(outbox):
        item = await outbox.wait()
        seen.append(item.body)
        outbox.confirmed(item)
    assert seen == [b'{"n": 0}', b'{"n": 1}', b'{"n": 2}']
    assert await outbox.drained(0.1)


def test_outbox_is_bounded_and_drops_the_oldest() -> None:
    outbox = Outbox(max_items=2)
    for i in range(4):
        outbox.put("progress", str(i).encode())
    head = outbox.peek()
    assert head is not None and head.body == b"2" and outbox.dropped == 2


class FakeExchange:
    def __init__(self, fail_first: int) -> None:
        self.fail_first = fail_first
        self.published: list[tuple[str, bytes, dict[str, Any]]] = []

    async def publish(self, body: bytes, routing_key: str, **options: Any) -> None:
        if self.fail_first > 0:
            self.fail_first -= 1
            raise ConnectionError("connection lost")
        self.published.append((routing_key, body, options))


def _listener(outbox: Outbox) -> Listener:
    tokens = SimpleNamespace(current="tok", get=lambda: asyncio.sleep(0, "tok"))
    identity = SimpleNamespace(peer_id="p1")
    status = SimpleNamespace(session="s")
    return Listener(
        identity,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        tokens,  # type: ignore[arg-type]
        Worker(),
        None,  # type: ignore[arg-type]
        status,  # type: ignore[arg-type]
        config_dir=Path("/nonexistent"),
        outbox=outbox,
    )


class Body(BaseModel):
    n: int


async def test_unconfirmed_telemetry_is_sent_again_in_the_next_session() -> None:
    outbox = Outbox()
    listener = _listener(outbox)
    listener.send(ACCEPTED, Body(n=1))
    listener.send(PROGRESS, Body(n=2))
    broken = FakeExchange(fail_first=1)
    await asyncio.wait_for(listener._send_outbox(broken), 5)  # type: ignore[arg-type]
    assert len(outbox) == 2 and broken.published == []
    healthy = FakeExchange(fail_first=0)
    sender = asyncio.create_task(listener._send_outbox(healthy))  # type: ignore[arg-type]
    assert await outbox.drained(5)
    sender.cancel()
    keys = [k for k, _, _ in healthy.published]
    assert keys == ["peer.p1.accepted", "peer.p1.progress"]
    _, body, first = healthy.published[0]
    assert first["headers"] == {"authorization": "Bearer tok"} or "tok" in str(first["headers"])
    assert first["persist"] is True and first["message_id"] and first["mandatory"] is True
    assert json.loads(body) == {"n": 1}


# -- shard cache and shards -------------------------------------------------------------


def _npz(**arrays: Any) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _put(cache: ShardCache, data: bytes) -> Path:
    sha = hashlib.sha256(data).hexdigest()
    part = cache.partial(sha)
    part.write_bytes(data)
    return cache.commit(part, sha)


def _used_ago(path: Path, seconds: float) -> None:
    """Date the file's last use (its mtime) ``seconds`` back, as if time had passed."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_the_cache_keeps_the_most_recently_used_and_checks_content(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path / "shards", max_files=2)
    blobs = [bytes([i]) * 100 for i in range(3)]
    shas = [hashlib.sha256(b).hexdigest() for b in blobs]
    _put(cache, blobs[0])
    _put(cache, blobs[1])
    _used_ago(cache.path(shas[0]), 200)  # put in this order, minutes apart
    _used_ago(cache.path(shas[1]), 100)
    assert cache.get(shas[0], 100) is not None  # used: now the most recent
    _put(cache, blobs[2])
    assert {p.name for p in cache.files()} == {f"{shas[0]}.npz", f"{shas[2]}.npz"}
    cache.path(shas[2]).write_bytes(b"x" * 100)  # damaged on disk
    assert cache.get(shas[2], 100) is None and not cache.path(shas[2]).exists()
    assert cache.get(shas[0], 99) is None  # wrong size: dropped too
    with pytest.raises(ValueError):
        cache.path("../../etc/passwd")


def test_the_cache_hashes_a_shard_again_only_when_the_file_changed(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path / "shards", settled_s=0)
    data = b"a" * 100
    sha = hashlib.sha256(data).hexdigest()
    path = _put(cache, data)
    assert cache.get(sha, 100) == path and cache.get(sha, 100) == path
    assert cache.hashed == 1  # checked once, then known unchanged
    path.write_bytes(b"b" * 100)  # damaged in place: same size, same inode
    _used_ago(path, 30)  # (its times moved, as any write moves them)
    assert cache.get(sha, 100) is None and not path.exists()
    assert cache.hashed == 2


def test_the_cache_hashes_a_shard_whose_stamp_is_too_recent_to_trust(tmp_path: Path) -> None:
    # a write within the clock's granularity of the stamp could leave the times as they
    # were: a stamp younger than ``settled_s`` is not remembered, so the file is hashed
    cache = ShardCache(tmp_path / "shards")
    data = b"a" * 100
    sha = hashlib.sha256(data).hexdigest()
    path = _put(cache, data)
    assert cache.get(sha, 100) == path
    path.write_bytes(b"b" * 100)  # at once: its times may not have moved
    assert cache.get(sha, 100) is None and cache.hashed == 2


def test_load_shard_reads_x_and_y(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    path.write_bytes(_npz(X=np.ones((4, 3), np.float64), y=np.arange(4, dtype=np.int32)))
    x, y = load_shard(path)
    assert str(x.dtype) == "torch.float32" and str(y.dtype) == "torch.int64"
    assert tuple(x.shape) == (4, 3) and y.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "arrays",
    [
        {"X": np.ones((2, 2), np.float32)},
        {"X": np.array([{"a": 1}, None], dtype=object), "y": np.zeros(2, np.int64)},
        {"X": np.ones((2, 2), np.float32), "y": np.zeros(3, np.int64)},
        {"X": np.ones((2, 2), np.int64), "y": np.zeros(2, np.int64)},
        {"X": np.ones((2, 2), np.float32), "y": np.zeros(2, np.float32)},
    ],
)
def test_load_shard_refuses_what_is_not_a_shard(tmp_path: Path, arrays: dict[str, Any]) -> None:
    path = tmp_path / "s.npz"
    path.write_bytes(_npz(**arrays))
    with pytest.raises(ShardInvalid):
        load_shard(path)


def test_load_shard_refuses_a_pickle(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    path.write_bytes(b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x01.")
    with pytest.raises(ShardInvalid):
        load_shard(path)


# -- transfers ----------------------------------------------------------------------------

PAYLOAD = b"0123456789" * 1000


def _source(data: bytes = PAYLOAD, **changes: Any) -> Download:
    values: dict[str, Any] = {
        "url": "http://store/obj",
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "key": "k",
    }
    values.update(changes)
    return Download(**values)


def _client(body: bytes, status: int = 200) -> httpx.Client:
    return httpx.Client(
        transport=httpx.MockTransport(lambda r: httpx.Response(status, content=body))
    )


def test_download_checks_size_and_sha256(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert download_to(_client(PAYLOAD), _source(), out).read_bytes() == PAYLOAD
    with pytest.raises(ChecksumMismatch, match="sha256"):
        download_to(_client(PAYLOAD), _source(sha256="0" * 64), out)
    assert not out.exists()
    with pytest.raises(ChecksumMismatch, match="more than"):
        download_to(_client(PAYLOAD + b"x"), _source(), out)
    with pytest.raises(ChecksumMismatch, match="received"):
        download_to(_client(PAYLOAD[:-1]), _source(), out)
    with pytest.raises(DownloadFailed, match="403"):
        download_to(_client(b"AccessDenied", 403), _source(), out)
    assert not out.exists()


def test_upload_sends_every_field_then_the_file_last() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        request.read()
        seen.append(request)
        return httpx.Response(204)

    http = httpx.Client(transport=httpx.MockTransport(handler))
    fields = {"key": "k", "policy": "p"}
    form = UploadForm(url="http://store/", fields=fields, key="k", max_bytes=10)
    upload_form(http, form, b"weights")
    body = seen[0].content
    assert body.index(b'name="key"') < body.index(b'name="policy"') < body.index(b'name="file"')
    assert body.rstrip().endswith(b"--") and b"weights" in body
    with pytest.raises(UploadFailed, match="over"):
        upload_form(http, form, b"x" * 11)
    refused = httpx.Client(
        transport=httpx.MockTransport(lambda r: httpx.Response(400, text="EntityTooLarge"))
    )
    with pytest.raises(UploadFailed, match="EntityTooLarge"):
        upload_form(refused, form, b"x")


# -- trainer and worker without a network --------------------------------------------------


def _task_json(task_id: str = "t1", job_id: str = "j1", **changes: Any) -> dict[str, Any]:
    dl = {"url": "http://127.0.0.1:9/x", "sha256": "0" * 64, "size": 1, "key": "k"}
    values: dict[str, Any] = {
        "type": "task",
        "task_id": task_id,
        "job_id": job_id,
        "round": 1,
        "attempt": 1,
        "shard": 0,
        "deadline": (datetime.now(UTC) + timedelta(minutes=5)).isoformat(),
        "model_version": 0,
        "model": dl,
        "data": dl,
        "upload": {"url": "http://127.0.0.1:9/", "fields": {}, "key": "u", "max_bytes": 10},
        "model_spec": {"arch": "mlp", "hidden": [4]},
        "feature_spec": table_features(2, 2).model_dump(mode="json"),
        "training": {"local_epochs": 1},
        "seed": 1,
    }
    values.update(changes)
    return values


class _Offline(Trainer):
    """A trainer whose model, shard and upload are local: it trains for real."""

    def __init__(self, tmp_path: Path, sent: list[tuple[str, Any]]) -> None:
        ok = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(204)))
        super().__init__(lambda k, b: sent.append((k, b)), cache_dir=tmp_path, http=ok)
        self.results: list[Any] = []
        gen = np.random.default_rng(0)
        self.shard = tmp_path / "shard.npz"
        x = gen.normal(size=(40, 2)).astype(np.float32)
        np.savez(self.shard, X=x, y=(x[:, 0] > 0).astype(np.int64))

    def fetch_model(self, task: Any) -> bytes:
        from peertrain.ml.weights import state_to_bytes
        from peertrain.ml.zoo import build_model

        return state_to_bytes(build_model(task.model_spec, task.feature_spec, seed=3).state_dict())

    def fetch_shard(self, task: Any) -> Path:
        return self.shard

    def make_update_bytes(self, task: Any, result: Any) -> bytes:
        self.results.append(result)
        return b"u"


def test_the_trainer_trains_at_the_rounds_learning_rate(tmp_path: Path) -> None:
    import torch

    from peertrain.ml.training import train_local
    from peertrain.ml.weights import state_from_bytes
    from peertrain.ml.zoo import build_model
    from peertrain.peer.shard import load_shard

    sent: list[tuple[str, Any]] = []
    trainer = _Offline(tmp_path, sent)
    schedule = {"kind": "step", "step_rounds": 1, "gamma": 0.5}
    training = {"local_epochs": 1, "rounds": 4, "lr": 0.1, "lr_schedule": schedule}
    body = _task_json("t3", round=3, training=training)
    body["upload"]["max_bytes"] = 100
    assert trainer.run(TaskMessage.model_validate(body)) is not None
    task = TaskMessage.model_validate(body)
    x, y = load_shard(trainer.shard)
    for round_, same in ((3, True), (1, False)):
        model = build_model(task.model_spec, task.feature_spec)
        model.load_state_dict(state_from_bytes(trainer.fetch_model(task)))
        own = train_local(model, x, y, task.training, seed=task.seed, device="cpu", round_=round_)
        delta = trainer.results[0].delta
        assert all(torch.equal(delta[k], own.delta[k]) for k in delta) is same


class _Slow(_Offline):
    """Records the waits its slowdown asks for instead of waiting."""

    def __init__(self, tmp_path: Path, sent: list[tuple[str, Any]], slowdown: float) -> None:
        super().__init__(tmp_path, sent)
        self.slowdown = slowdown
        self.paused: list[float] = []

    def pause(self, run: Any, seconds: float) -> None:
        self.paused.append(seconds)


@pytest.mark.parametrize(("slowdown", "waits"), [(1.0, 0), (4.0, 1)])
def test_a_slowed_peer_waits_its_factor_less_one_times_its_compute_time(
    tmp_path: Path, slowdown: float, waits: int
) -> None:
    trainer = _Slow(tmp_path, [], slowdown)
    body = _task_json("t1")
    body["upload"]["max_bytes"] = 100
    assert trainer.run(TaskMessage.model_validate(body)) is not None
    assert len(trainer.paused) == waits
    if waits:
        assert trainer.paused == [3.0 * trainer.results[0].duration_s]


def test_a_slowdown_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="slowdown"):
        Trainer(lambda k, b: None, cache_dir=tmp_path, slowdown=0.5)
    with pytest.raises(ValueError, match="slowdown"):
        PeerSettings(slowdown=0.5)


def test_fedbn_keeps_the_peers_batch_norm_per_job_and_shard_until_a_restart(
    tmp_path: Path,
) -> None:
    import torch
    from torch import nn

    from peertrain.ml.graph import to_graph

    net = nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    graph = to_graph(net, torch.zeros(2, 2)).model_dump(mode="json")
    training = {"local_epochs": 1, "batch_size": 32, "batch_norm": "local"}
    counts = []
    trainer = _Offline(tmp_path, [])
    for round_ in (1, 2):  # the same global version each round: only the kept layers move
        body = _task_json(f"t{round_}", round=round_, model_spec=graph, training=training)
        body["upload"]["max_bytes"] = 100
        assert trainer.run(TaskMessage.model_validate(body)) is not None
        delta = trainer.results[-1].delta
        counts.append(int(next(v for k, v in delta.items() if k.endswith("num_batches_tracked"))))
    restarted = _Offline(tmp_path, [])
    body = _task_json("t3", round=3, model_spec=graph, training=training)
    body["upload"]["max_bytes"] = 100
    assert restarted.run(TaskMessage.model_validate(body)) is not None
    delta = restarted.results[-1].delta
    counts.append(int(next(v for k, v in delta.items() if k.endswith("num_batches_tracked"))))
    # 40 rows, 2 batches a round: deltas of the received version (count 0) count the
    # peer's own batches so far; a restarted peer starts from the global layers again
    assert counts == [2, 4, 2]


def test_topk_residuals_are_kept_per_job_and_shard_until_the_job_is_cancelled(
    tmp_path: Path,
) -> None:
    """The peer uploads ``compress_update`` of its delta and its residual so far (the
    simulation's call); a cancel of the whole job, or a restart, forgets the residual."""
    import torch

    from peertrain.common.specs import CompressionSpec
    from peertrain.ml.training import train_local
    from peertrain.ml.weights import state_from_bytes
    from peertrain.ml.weights.compression import compress_update
    from peertrain.ml.zoo import build_model

    spec = CompressionSpec(kind="topk", ratio=0.1)
    training = {"local_epochs": 1, "compression": spec.model_dump()}
    trainer = _Offline(tmp_path, [])

    def run(task_id: str, shard: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
        body = _task_json(task_id, shard=shard, model_spec={"arch": "mlp", "hidden": [32]})
        body["training"], body["upload"]["max_bytes"] = training, 10_000
        task = TaskMessage.model_validate(body)
        assert trainer.run(task) is not None
        model = build_model(task.model_spec, task.feature_spec)
        model.load_state_dict(state_from_bytes(trainer.fetch_model(task)))
        x, y = load_shard(trainer.shard)
        own = train_local(model, x, y, task.training, seed=task.seed, device="cpu", round_=1)
        return trainer.results[-1].delta, own.delta

    def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
        return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

    sent, delta = run("t1")
    first = compress_update(delta, spec)
    assert any(k.endswith(".__idx__") for k in sent) and same(sent, first.tensors)
    sent, delta = run("t2")  # the same job and shard: what t1 left out rides along
    assert same(sent, compress_update(delta, spec, first.residual).tensors)
    assert not same(sent, compress_update(delta, spec).tensors)
    sent, delta = run("t3", shard=1)  # another shard starts without one
    assert same(sent, compress_update(delta, spec).tensors)
    trainer.cancel("j1")  # the job is over: its residuals go
    sent, delta = run("t4")
    assert same(sent, compress_update(delta, spec).tensors)


class _Log:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def _record(self, event: str, **kw: Any) -> None:
        self.events.append({"event": event, **kw})

    info = warning = _record


def test_cuda_only_settings_off_cuda_are_told_once_per_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from peertrain.peer import trainer as module

    log = _Log()  # the module's logger (structlog's may be cached by another test)
    monkeypatch.setattr(module, "log", log)
    trainer = _Offline(tmp_path, [])
    trainer.device = "cpu"
    training = {"local_epochs": 1, "precision": "bf16", "channels_last": True}
    for task_id, job_id in (("t1", "j1"), ("t2", "j1"), ("t3", "j2")):
        body = _task_json(task_id, job_id, training=training)
        body["upload"]["max_bytes"] = 100
        assert trainer.run(TaskMessage.model_validate(body)) is not None
    told = [e for e in log.events if e["event"].startswith("CUDA-only training settings")]
    assert [e["settings"] for e in told] == [["precision=bf16", "channels_last"]] * 2
    assert len(trainer.results) == 3


def test_a_malformed_task_is_dropped_silently() -> None:
    sent: list[Any] = []
    trainer = FakeTrainer()
    worker = Worker(trainer)  # type: ignore[arg-type]
    for body in (b'{"type": "task", "job_id": "j1"}', b"not json"):
        item = WorkItem("peer.p1.task", body)
        assert item.message is None and item.task is None
        worker.handle(item)
    assert trainer.handled == [] and sent == []


def test_a_work_item_parses_its_message_once() -> None:
    task = _item("task", _task_json("t1", "j1"))
    assert isinstance(task.message, TaskMessage) and task.task is task.message
    assert task.task.feature_spec.data_shape.input_size == 2
    cancel = _item("cancel", {"type": "cancel", "job_id": "j1"})
    assert isinstance(cancel.message, CancelMessage) and cancel.task is None
    assert WorkItem("peer.p1.other", b"{}").message is None


def test_any_error_is_reported_as_failed_with_a_capped_traceback(tmp_path: Path) -> None:
    sent: list[tuple[str, Any]] = []

    class Deep(Trainer):
        def fetch_model(self, task: Any) -> bytes:
            def recurse(n: int) -> bytes:
                if n == 0:
                    raise RuntimeError("boom " + "x" * 5000)
                return recurse(n - 1)

            return recurse(400)

    trainer = Deep(lambda k, b: sent.append((k, b)), cache_dir=tmp_path)
    assert trainer.run(TaskMessage.model_validate(_task_json())) is None
    assert [k for k, _ in sent] == [ACCEPTED, FAILED]
    failed: TaskFailedBody = sent[1][1]
    assert failed.error.startswith("RuntimeError: boom") and len(failed.error) <= 2000
    assert len(failed.traceback) <= MAX_TRACEBACK and failed.traceback.rstrip().endswith("xxx")


def test_progress_bodies_follow_the_contract() -> None:
    from peertrain.ml.training import EpochMetrics
    from peertrain.peer.trainer import _progress

    task = TaskMessage.model_validate(_task_json())
    body = _progress(task, [EpochMetrics(1, 0.5, 0.9, 10, 0.1)], 3)
    assert isinstance(body, TaskProgressBody) and (body.epoch, body.epochs) == (1, 3)
    assert body.earlier == ()
    done = [EpochMetrics(e, float("nan") if e == 2 else 0.5, 0.9, 10, 0.1) for e in (1, 2, 3)]
    body = TaskProgressBody.model_validate_json(_progress(task, done, 3).model_dump_json())
    assert body.epoch == 3 and [(e.epoch, e.loss) for e in body.earlier] == [(1, 0.5), (2, None)]


def _epochs_task(epochs: int) -> TaskMessage:
    task = TaskMessage.model_validate(_task_json())
    training = task.training.model_copy(update={"local_epochs": epochs})
    return task.model_copy(update={"training": training})


def test_a_tasks_fast_epochs_are_one_report_and_slow_ones_one_each() -> None:
    """Epochs quicker than the interval wait for the next report (the last epoch's goes
    at once); with an interval of 0 each epoch is a report of its own; what training
    that ends early left unreported goes when it ends."""
    from peertrain.ml.training import EpochMetrics
    from peertrain.peer.trainer import _Progress

    def reports(every_s: float, epochs: list[int], end: int = 4) -> list[list[int]]:
        sent: list[TaskProgressBody] = []
        progress = _Progress(_epochs_task(end), lambda _k, b: sent.append(b), every_s)
        for e in epochs:
            progress.epoch(EpochMetrics(e, 0.5, 0.9, 10, 0.01))
        progress.flush()
        return [[*(x.epoch for x in b.earlier), b.epoch] for b in sent]

    assert reports(3600, [1, 2, 3, 4]) == [[1, 2, 3, 4]]
    assert reports(0, [1, 2, 3, 4]) == [[1], [2], [3], [4]]
    assert reports(3600, [1, 2]) == [[1, 2]]  # cancelled or failed after epoch 2


class FakeTrainer:
    def __init__(self) -> None:
        self.running: str | None = None
        self.cancels: list[tuple[str, str | None]] = []
        self.handled: list[TaskMessage] = []
        self.release = threading.Event()

    def running_task(self) -> str | None:
        return self.running

    def cancel(self, job_id: str, task_id: str | None = None) -> bool:
        self.cancels.append((job_id, task_id))
        return True

    def run(self, task: TaskMessage) -> None:
        self.running = task.task_id
        self.handled.append(task)
        self.release.wait(5)
        self.running = None


def _item(kind: str, body: dict[str, Any]) -> WorkItem:
    return WorkItem(f"peer.p1.{kind}", json.dumps(body).encode())


def test_a_cancel_skips_the_queue_and_drops_the_jobs_queued_tasks() -> None:
    fake = FakeTrainer()
    worker = Worker(fake)  # type: ignore[arg-type]
    worker.start()
    try:
        worker.submit(_item("task", _task_json("t1", "j1")))
        deadline = time.monotonic() + 5
        while fake.running != "t1" and time.monotonic() < deadline:
            time.sleep(0.01)
        worker.submit(_item("task", _task_json("t1", "j1")))  # duplicate of the running one
        worker.submit(_item("task", _task_json("t2", "j1")))
        worker.submit(_item("task", _task_json("t2", "j1")))  # duplicate of a queued one
        worker.submit(_item("task", _task_json("t3", "j2")))
        assert worker.backlog == 2
        worker.submit(_item("cancel", {"type": "cancel", "job_id": "j1"}))
        assert fake.cancels == [("j1", None)]  # at once, on this thread
        assert worker.backlog == 1
        worker.submit(_item("cancel", {"nonsense": True}))  # malformed: dropped
        fake.release.set()  # the running task stops
        while len(fake.handled) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        worker.stop()
    assert [t.task_id for t in fake.handled] == ["t1", "t3"]


def test_item_kind_comes_from_the_routing_key() -> None:
    assert WorkItem("peer.abc.cancel", b"{}").kind == "cancel"
    assert WorkItem("", b"{}").kind == ""
