"""Sharding, run from ``job.created``: one shard per peer, plus the holdout, for the job.

The outcome is the one event of the stream ``sharding:<job_id>`` (appended only to an
empty stream), so a job is sharded once however often ``job.created`` is delivered; a
delivery that finds the outcome already there does nothing.
"""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import structlog
from numpy.typing import NDArray

from peertrain.common.blobs import BlobNotFound
from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import (
    DatasetSharded,
    DatasetShardingFailed,
    DatasetValidated,
    ShardRef,
    sharding_stream,
)
from peertrain.common.events.training import JobCreated
from peertrain.dataset.domain.dataset import DatasetState
from peertrain.dataset.domain.errors import DatasetError, DatasetGone, TooFewRows
from peertrain.dataset.domain.sharding import ShardingStrategy
from peertrain.dataset.prepare.shards import ShardFile, job_prefix, shard_key, write_shards

from .artifacts import copy_object, upload_file

if TYPE_CHECKING:
    from peertrain.dataset.application import DatasetApp


__all__ = ["shard_for_job"]

log = structlog.get_logger(__name__)

_POLL_S = 0.5
_PARALLEL_UPLOADS = 2


async def _wait_until_decided(app: DatasetApp, dataset_id: str) -> DatasetState | None:
    clock = app.clock
    deadline = clock.monotonic() + app.settings.shard_wait_s
    while True:
        state = await app.load(dataset_id)
        if state is None or state.status != "validating" or clock.monotonic() >= deadline:
            return state
        await asyncio.sleep(_POLL_S)


async def shard_for_job(app: DatasetApp, event: RecordedEvent) -> None:
    """Shard the job's dataset (or record why not)."""
    assert isinstance(event.data, JobCreated)
    job = event.data
    stream = sharding_stream(job.job_id)
    if (await app.sharding.load(stream)).version > 0:
        return
    state = await _wait_until_decided(app, job.dataset_id)
    if state is None or state.status == "deleted" or state.owner_id != job.owner_id:
        await _fail(app, event, "dataset_not_found", f"no dataset {job.dataset_id!r} for this job")
        return
    if state.status == "rejected":
        await _fail(app, event, "dataset_rejected", f"dataset {job.dataset_id!r} was rejected")
        return
    if state.status != "validated" or state.validated is None:
        await _fail(app, event, "dataset_not_ready", f"dataset {job.dataset_id!r} is not validated")
        return
    try:
        sharded = await _shard(app, job, state.validated)
    except (TooFewRows, DatasetGone) as exc:
        await _fail(app, event, exc.code, exc.message)
        return
    if not await _record(app, event, sharded):
        return  # another delivery got there first; its shards are the same bytes
    log.info("dataset sharded", job_id=job.job_id, shards=len(sharded.shards))


async def _record(
    app: DatasetApp, cause: RecordedEvent, outcome: DatasetSharded | DatasetShardingFailed
) -> bool:
    """Append the job's one sharding outcome; ``False`` if it has one already."""
    assert isinstance(cause.data, JobCreated)
    saved = await app.sharding.execute(
        sharding_stream(cause.data.job_id),
        lambda version: [] if version else [outcome],
        new=True,
        causation=cause,
        actor=cause.data.owner_id,
    )
    return bool(saved.events)


async def _shard(app: DatasetApp, job: JobCreated, data: DatasetValidated) -> DatasetSharded:
    blobs = app.blobs
    prefix = job_prefix(job.job_id)
    strategy = app.sharding_strategy(job)
    started = time.perf_counter()
    async with app.workspace(f"shard-{job.job_id}") as scratch:
        try:
            labels_bytes = await blobs.get_bytes(data.train_y.key)
            x_path = scratch / "train-x.npy"
            digest = await blobs.download_to(data.train_x.key, x_path)
        except BlobNotFound:
            raise DatasetGone(f"the data of dataset {data.dataset_id!r} is gone") from None
        downloaded = time.perf_counter()
        if digest.sha256 != data.train_x.sha256:
            raise DatasetError(f"the training data of {data.dataset_id!r} is corrupt")
        labels = np.load(io.BytesIO(labels_bytes), allow_pickle=False)
        del labels_bytes
        out = scratch / "shards"
        files = await asyncio.to_thread(
            _cut, x_path, labels, strategy, len(job.peers), len(data.classes), out
        )
        del labels
        written = time.perf_counter()
        x_path.unlink()
        uploads = asyncio.Semaphore(_PARALLEL_UPLOADS)

        async def store(shard: ShardFile) -> ShardRef:
            async with uploads:
                ref = await upload_file(
                    blobs,
                    shard_key(job.job_id, shard.index),
                    shard.path,
                    rows=shard.rows,
                    class_counts=shard.class_counts,
                )
            await asyncio.to_thread(shard.path.unlink)
            return ShardRef(**ref.model_dump(), index=shard.index, peer_id=job.peers[shard.index])

        refs = await asyncio.gather(*(store(shard) for shard in files))
    log.info(
        "sharding timings",
        job_id=job.job_id,
        download_s=round(downloaded - started, 3),
        write_s=round(written - downloaded, 3),
        upload_s=round(time.perf_counter() - written, 3),
    )
    try:
        holdout = await copy_object(blobs, data.holdout, f"{prefix}holdout.npz")
    except BlobNotFound:
        raise DatasetGone(f"the holdout of dataset {data.dataset_id!r} is gone") from None
    return DatasetSharded(
        dataset_id=data.dataset_id,
        job_id=job.job_id,
        sharding=job.sharding,
        shards=tuple(refs),
        holdout=holdout,
        feature_spec=data.feature_spec,
    )


def _cut(
    x_path: Path,
    labels: NDArray[np.int32],
    strategy: ShardingStrategy,
    n_shards: int,
    num_classes: int,
    out: Path,
) -> list[ShardFile]:
    """The CPU part of sharding (in a worker thread): assign the rows, write the files."""
    assignment = strategy.assign(labels, n_shards)
    out.mkdir()
    return write_shards(x_path, labels, assignment, n_shards, num_classes, out)


async def _fail(app: DatasetApp, cause: RecordedEvent, code: str, message: str) -> None:
    assert isinstance(cause.data, JobCreated)
    job = cause.data
    failed = DatasetShardingFailed(
        dataset_id=job.dataset_id, job_id=job.job_id, code=code, message=message
    )
    if not await _record(app, cause, failed):
        return
    log.info("sharding failed", job_id=job.job_id, reason=code)
