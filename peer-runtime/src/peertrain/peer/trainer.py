"""The trainer: one task at a time, on the worker thread.

For each ``peer.<id>.task``: say ``accepted``; fetch the model version and the shard
(presigned GETs, size-capped, sha256-checked; shards cached across rounds); build the
zoo model, load the version's weights, train the local epochs (``progress``: the
epochs done since the previous report, at most every :data:`PROGRESS_EVERY_S` and at
the last one); encode the delta as ``training.compression`` says and upload it as safetensors
with the presigned POST; announce ``update``.
With ``training.batch_norm: local`` (FedBN) the peer trains with its own BatchNorm
layers, kept in memory per job and shard (:func:`peertrain.ml.weights.use_local_layers`),
and still sends the delta of the received version. With ``topk`` compression, what the
encoding left out (the residual of
:func:`peertrain.ml.weights.compression.compress_update`) is kept in memory per job
and shard too, added to the next update, and forgotten when the job is cancelled (or
pushed out by newer jobs); a restarted peer starts without it.
Anything that raises becomes ``failed``; a cancel stops it with nothing more said.

Subclasses (tests, hostile peers) override :meth:`Trainer.make_update_bytes` and
:meth:`Trainer.announce`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import threading
import time
import traceback
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import structlog
import structlog.contextvars
import torch
from pydantic import BaseModel

from peertrain.common.events.tasks import (
    ACCEPTED,
    FAILED,
    MAX_TRACEBACK,
    PROGRESS,
    UPDATE,
    EpochReport,
    TaskAcceptedBody,
    TaskFailedBody,
    TaskMessage,
    TaskProgressBody,
    UpdateAnnounced,
)
from peertrain.ml.device import select_device
from peertrain.ml.errors import TrainingCancelled
from peertrain.ml.training import (
    EpochMetrics,
    Inputs,
    TrainResult,
    cuda_only_settings,
    train_local,
)
from peertrain.ml.weights import (
    keep_local_layers,
    state_from_bytes,
    state_to_bytes,
    use_local_layers,
)
from peertrain.ml.weights.compression import compress_update
from peertrain.ml.zoo import build_model

from .cache import ShardCache
from .errors import TaskError
from .shard import load_shard
from .transfer import download_to, upload_form

__all__ = ["PROGRESS_EVERY_S", "Send", "Trainer"]

log = structlog.get_logger(__name__)

Send = Callable[[str, BaseModel], None]
"""Publishes a telemetry body as ``peer.<id>.<kind>`` (thread-safe, returns at once)."""

MAX_ERROR = 2000
PROGRESS_EVERY_S = 1.0
"""A task's progress reports come at most this often (its last epoch's at once): a task
of fast epochs is one report, where one per epoch was a message to the platform and an
event in the job's log each."""
REMEMBERED = 512
LOCAL_LAYERS_KEPT = 32
"""Jobs (job and shard) whose own BatchNorm layers a peer keeps (FedBN), most recent."""
RESIDUALS_KEPT = 8
"""Jobs (job and shard) whose top-k residual a peer keeps, most recent (each is the
size of the model in float32)."""


class _Run:
    """The task in progress and its stop flag."""

    def __init__(self, task: TaskMessage) -> None:
        self.task = task
        self.stop = threading.Event()


class _Progress:
    """A task's epochs, reported together: each waits for the next report, which goes
    ``every_s`` after the previous one (``accepted`` at the task's start counts) or at
    the last epoch."""

    def __init__(self, task: TaskMessage, send: Send, every_s: float) -> None:
        self.task = task
        self.send = send
        self.every_s = every_s
        self.epochs = task.training.local_epochs
        self.pending: list[EpochMetrics] = []
        self.last = time.monotonic()

    def epoch(self, m: EpochMetrics) -> None:
        """``m`` is done: reported now if its report is due."""
        self.pending.append(m)
        if m.epoch >= self.epochs or time.monotonic() - self.last >= self.every_s:
            self.flush()

    def flush(self) -> None:
        """Report the epochs not reported yet (training ended early: cancelled, failed)."""
        if self.pending:
            self.send(PROGRESS, _progress(self.task, self.pending, self.epochs))
            self.pending = []
            self.last = time.monotonic()


class Trainer:
    """Runs tasks for this peer, one at a time.

    Parameters
    ----------
    send
        Where telemetry goes (the listener's thread-safe ``send``).
    cache_dir
        Shards are cached in ``cache_dir/shards``, models fetched into ``cache_dir/work``.
    threads
        torch CPU threads; ``None`` leaves torch's setting.
    device
        ``None``: CUDA, then MPS, then the CPU.
    cache_max_files
        Shards kept.
    http
        The HTTP client for presigned URLs (one is made if ``None``).
    deadline_grace_s
        Training stops (as ``failed``) this long after the task's deadline (slack for
        clock skew).
    slowdown
        After each task's training, wait ``slowdown - 1`` times the compute time just
        measured before uploading: a peer of factor 4 takes 4 times as long (benchmarks
        and tests of uneven volunteers; 1, the default, never waits).
    progress_every_s
        A task's progress reports come at most this often (:data:`PROGRESS_EVERY_S`; 0:
        one per epoch).
    """

    def __init__(
        self,
        send: Send,
        *,
        cache_dir: Path,
        threads: int | None = None,
        device: str | None = None,
        cache_max_files: int = 8,
        http: httpx.Client | None = None,
        deadline_grace_s: float = 30.0,
        slowdown: float = 1.0,
        progress_every_s: float = PROGRESS_EVERY_S,
    ) -> None:
        if not slowdown >= 1:
            raise ValueError(f"slowdown must be at least 1, not {slowdown}")
        self.send = send
        self.cache = ShardCache(cache_dir / "shards", cache_max_files)
        self.work_dir = cache_dir / "work"
        self.threads = threads
        self.device = device
        self.deadline_grace_s = deadline_grace_s
        self.slowdown = float(slowdown)
        self.progress_every_s = progress_every_s
        self._http = http
        self._own_http = http is None
        self._lock = threading.Lock()
        self._run: _Run | None = None
        self._finished: OrderedDict[str, UpdateAnnounced] = OrderedDict()
        self._cancelled: OrderedDict[str, None] = OrderedDict()
        self._told_cuda_only: OrderedDict[str, None] = OrderedDict()  # job ids
        # FedBN (training.batch_norm: local): this peer's own BatchNorm tensors by
        # "<job>/<shard>", in memory only: after a restart it starts from the global ones
        self._local_layers: OrderedDict[str, dict[str, torch.Tensor]] = OrderedDict()
        # top-k error feedback: what this peer's updates left out, by "<job>/<shard>"
        self._residuals: OrderedDict[str, dict[str, torch.Tensor]] = OrderedDict()

    @property
    def http(self) -> httpx.Client:
        """The HTTP client (made on first use)."""
        if self._http is None:
            self._http = httpx.Client(timeout=httpx.Timeout(60.0, connect=10.0))
        return self._http

    def close(self) -> None:
        """Close the HTTP client if this trainer made it."""
        if self._own_http and self._http is not None:
            self._http.close()
            self._http = None

    # -- from other threads ---------------------------------------------------------------

    def running_task(self) -> str | None:
        """The id of the task in progress (thread-safe)."""
        with self._lock:
            return self._run.task.task_id if self._run else None

    def cancel(self, job_id: str, task_id: str | None = None) -> bool:
        """Stop the running task of ``job_id`` (only ``task_id`` if given); thread-safe.

        Returns whether a running task was told to stop. A cancelled task id is
        remembered: delivered again, it is dropped.
        """
        with self._lock:
            if task_id is not None:
                _remember(self._cancelled, task_id, None)
            else:  # the job is over for this peer: its residuals go
                for key in [k for k in self._residuals if k.startswith(f"{job_id}/")]:
                    del self._residuals[key]
            run = self._run
            if run is None or run.task.job_id != job_id:
                return False
            if task_id is not None and run.task.task_id != task_id:
                return False
            _remember(self._cancelled, run.task.task_id, None)
            run.stop.set()
            return True

    def cancel_all(self) -> None:
        """Stop whatever runs (the runtime is shutting down)."""
        with self._lock:
            if self._run is not None:
                self._run.stop.set()

    # -- on the worker thread ---------------------------------------------------------------

    def run(self, task: TaskMessage) -> UpdateAnnounced | None:
        """Do ``task``; its announced update, or ``None`` (failed, cancelled, ignored)."""
        with self._lock:
            done = self._finished.get(task.task_id)
            if done is None and task.task_id in self._cancelled:
                log.info("cancelled task delivered again: dropped", task_id=task.task_id)
                return None
            if done is None and self._run is not None:  # only when called from two threads
                log.info("a task is running: ignored", task_id=task.task_id)
                return None
            if done is None:
                self._run = run = _Run(task)
        if done is not None:
            log.info("task already done: update announced again", task_id=task.task_id)
            self.announce(task, done)
            return done
        ctx = structlog.contextvars.bound_contextvars(task_id=task.task_id, job_id=task.job_id)
        with ctx:
            try:
                return self._attempt(task, run)
            finally:
                with self._lock:
                    self._run = None

    def _attempt(self, task: TaskMessage, run: _Run) -> UpdateAnnounced | None:
        device = select_device(self.device)
        self.send(ACCEPTED, TaskAcceptedBody(**_ref(task), device=str(device)))
        log.info("task accepted", round=task.round, device=str(device))
        self._tell_cuda_only(task, device)
        try:
            announced = self._work(task, run, device)
        except TrainingCancelled as exc:
            if run.stop.is_set():
                log.info("task cancelled", epochs_done=exc.epochs_done)
                return None
            self._failed(task, TaskError("the task's deadline passed"))
            return None
        except Exception as exc:
            log.warning("task failed", error=repr(exc)[:300])
            self._failed(task, exc)
            return None
        with self._lock:
            _remember(self._finished, task.task_id, announced)
        self.announce(task, announced)
        log.info("update announced", key=announced.key, size=announced.size)
        return announced

    def _tell_cuda_only(self, task: TaskMessage, device: torch.device) -> None:
        """Say once per job when its CUDA-only settings do not apply here (fp32 instead)."""
        ignored = cuda_only_settings(task.training) if device.type != "cuda" else ()
        if ignored and task.job_id not in self._told_cuda_only:
            _remember(self._told_cuda_only, task.job_id, None)
            log.info(
                "CUDA-only training settings not applied: training in fp32",
                settings=list(ignored),
                device=str(device),
            )

    def _work(self, task: TaskMessage, run: _Run, device: torch.device) -> UpdateAnnounced:
        deadline = _aware(task.deadline) + timedelta(seconds=self.deadline_grace_s)

        def should_stop() -> bool:
            return run.stop.is_set() or datetime.now(UTC) > deadline

        def check() -> None:
            if should_stop():
                raise TrainingCancelled()

        state = state_from_bytes(self.fetch_model(task))
        check()
        x, y = load_shard(self.fetch_shard(task))
        check()
        model = build_model(task.model_spec, task.feature_spec.data_shape)
        model.load_state_dict(state, strict=True)
        local_key = f"{task.job_id}/{task.shard}"
        received = None
        if task.training.batch_norm == "local":
            received = use_local_layers(model, self._local_layers.get(local_key))
        progress = _Progress(task, self.send, self.progress_every_s)
        try:
            result = train_local(
                model,
                x,
                y,
                task.training,
                seed=task.seed,
                should_stop=should_stop,
                on_epoch=progress.epoch,
                device=device,
                threads=self.threads,
                round_=task.round,
                inputs=Inputs.of(task.feature_spec, task.training),
            )
        finally:
            progress.flush()
        local = None
        if received is not None:  # the delta is of the received version, as always
            delta, local = keep_local_layers(model, result.delta, received)
            result = dataclasses.replace(result, delta=delta)
        if self.slowdown > 1:
            self.pause(run, (self.slowdown - 1) * result.duration_s)
        with self._lock:
            residual = self._residuals.get(local_key)
        encoded = compress_update(result.delta, task.training.compression, residual)
        data = self.make_update_bytes(task, dataclasses.replace(result, delta=encoded.tensors))
        check()
        upload_form(self.http, task.upload, data)
        if local is not None:
            _keep(self._local_layers, local_key, local, LOCAL_LAYERS_KEPT)
        if encoded.residual is not None:
            with self._lock:
                _keep(self._residuals, local_key, encoded.residual, RESIDUALS_KEPT)
        final = result.final
        return UpdateAnnounced(
            **_ref(task),
            key=task.upload.key,
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
            samples=result.samples,
            train_loss=final.loss,
            train_accuracy=final.accuracy,
            duration_s=result.duration_s,
        )

    def pause(self, run: _Run, seconds: float) -> None:
        """Wait ``seconds`` (``slowdown``), or until the task is cancelled."""
        run.stop.wait(max(0.0, seconds))

    def _failed(self, task: TaskMessage, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}"[:MAX_ERROR]
        trace = "".join(traceback.format_exception(exc))[-MAX_TRACEBACK:]
        self.send(FAILED, TaskFailedBody(**_ref(task), error=error, traceback=trace))

    # -- fetching -----------------------------------------------------------------------------

    def fetch_model(self, task: TaskMessage) -> bytes:
        """The model version's bytes (checked), fetched into the work dir and read."""
        path = self.work_dir / f"model-{uuid.uuid4().hex}.safetensors"
        try:
            download_to(self.http, task.model, path)
            return path.read_bytes()
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def fetch_shard(self, task: TaskMessage) -> Path:
        """The shard's file: from the cache, or downloaded (checked) into it."""
        cached = self.cache.get(task.data.sha256, task.data.size)
        if cached is not None:
            log.info("shard from the cache", key=task.data.key)
            return cached
        partial = self.cache.partial(task.data.sha256)
        download_to(self.http, task.data, partial)
        return self.cache.commit(partial, task.data.sha256)

    # -- seams ----------------------------------------------------------------------------------

    def make_update_bytes(self, task: TaskMessage, result: TrainResult) -> bytes:
        """What gets uploaded: ``result.delta`` as safetensors, the delta as it travels
        (encoded as ``training.compression`` says; the float32 delta itself for ``none``)."""
        return state_to_bytes(result.delta)

    def announce(self, task: TaskMessage, announced: UpdateAnnounced) -> None:
        """Publish ``update`` (a subclass may do it more than once)."""
        self.send(UPDATE, announced)


def _ref(task: TaskMessage) -> dict[str, Any]:
    return {
        "task_id": task.task_id,
        "job_id": task.job_id,
        "round": task.round,
        "attempt": task.attempt,
        "shard": task.shard,
    }


def _progress(task: TaskMessage, done: list[EpochMetrics], epochs: int) -> TaskProgressBody:
    """The report of the epochs ``done`` (the last one the latest)."""
    *earlier, m = done
    return TaskProgressBody(
        **_ref(task),
        **_epoch(m).model_dump(),
        epochs=max(epochs, m.epoch),
        earlier=tuple(_epoch(e) for e in earlier),
    )


def _epoch(m: EpochMetrics) -> EpochReport:
    return EpochReport(
        epoch=m.epoch,
        loss=m.loss,
        accuracy=m.accuracy,
        samples=m.samples,
        duration_s=max(0.0, m.duration_s),
    )


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _keep(memory: OrderedDict[str, Any], key: str, value: Any, most: int) -> None:
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > most:
        memory.popitem(last=False)


def _remember(memory: OrderedDict[str, Any], key: str, value: Any) -> None:
    _keep(memory, key, value, REMEMBERED)
