"""Validation, run from ``dataset.uploaded``: accept (encoded, split) or reject (cleaned up).

The raw upload is streamed from the bucket to scratch space, prepared in a worker
thread (the event loop keeps serving), and the outcome appended to the dataset's
stream only while the dataset still waits for it: if it was deleted meanwhile (the
append conflicts, or the state already says so), whatever was written is removed.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING

import structlog

from peertrain.common.blobs import BlobError, BlobNotFound
from peertrain.common.eventlog import Decide
from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import (
    MISSING_TOKENS,
    DatasetRejected,
    DatasetUploaded,
    DatasetValidated,
)
from peertrain.dataset.domain.dataset import DatasetState, raw_prefix, schema_key
from peertrain.dataset.domain.errors import InvalidDataset
from peertrain.dataset.domain.holdout import holdout_seed
from peertrain.dataset.prepare import PreparedDataset, PrepareOptions, prepare_upload

from .artifacts import upload_file

if TYPE_CHECKING:
    from peertrain.dataset.application import DatasetApp


__all__ = ["store_prepared", "validate_upload"]

log = structlog.get_logger(__name__)


async def validate_upload(app: DatasetApp, event: RecordedEvent) -> None:
    """Validate the upload ``event`` announced (a no-op once it was decided)."""
    assert isinstance(event.data, DatasetUploaded)
    state = await app.load(event.data.dataset_id)
    if state is None or state.status != "validating":
        return
    uploaded = state.uploaded
    clock = _Clock()
    async with app.workspace(f"validate-{uploaded.dataset_id}") as scratch:
        raw_path = scratch / "raw"
        try:
            digest = await app.blobs.download_to(uploaded.raw.key, raw_path)
            clock.lap("downloaded")
        except BlobNotFound:
            await _reject(app, state, event, InvalidDataset("the uploaded file is gone"))
            return
        if digest.sha256 != uploaded.raw.sha256:
            await _reject(
                app, state, event, InvalidDataset("the uploaded file changed after upload")
            )
            return
        options = PrepareOptions(
            label_column=uploaded.label_column,
            holdout_fraction=uploaded.holdout_fraction,
            holdout_seed=holdout_seed(uploaded.dataset_id, uploaded.holdout_seed),
            image_size=uploaded.image_size,
            image_fit=uploaded.image_fit,
            missing_values=(
                MISSING_TOKENS if uploaded.missing_values is None else uploaded.missing_values
            ),
        )
        work = scratch / "work"
        work.mkdir()
        try:
            prepared = await asyncio.to_thread(
                prepare_upload, raw_path, uploaded.filename, work, options, app.limits
            )
        except InvalidDataset as exc:
            await _reject(app, state, event, exc)
            return
        except (MemoryError, OSError, BlobError):
            raise  # the machine, not the data: worth another delivery
        except Exception as exc:
            log.exception("validation failed unexpectedly", dataset_id=uploaded.dataset_id)
            await _reject(
                app, state, event, InvalidDataset(f"the file could not be read: {exc!r}"[:300])
            )
            return
        clock.lap("prepared")
        raw_path.unlink(missing_ok=True)
        await store_prepared(app, state, event, prepared)
        clock.lap("stored")
        log.info("validation timings", dataset_id=uploaded.dataset_id, **clock.laps)


async def store_prepared(
    app: DatasetApp, state: DatasetState, cause: RecordedEvent, prepared: PreparedDataset
) -> None:
    """Store a prepared dataset's files and record it validated (a no-op on a dataset
    no longer waiting for its validation: what was stored is removed if it was deleted).

    Validation's own end; the simulation stores its data as a dataset through it.
    """
    dataset_id = state.dataset_id
    prefix = raw_prefix(dataset_id)
    blobs = app.blobs
    preview_path = prepared.train_x.parent / "preview.json"
    preview_path.write_text(json.dumps(prepared.preview, ensure_ascii=False))
    train_x = await upload_file(
        blobs, f"{prefix}train/X.npy", prepared.train_x, rows=prepared.train_rows
    )
    train_y = await upload_file(
        blobs, f"{prefix}train/y.npy", prepared.train_y, rows=prepared.train_rows
    )
    holdout = await upload_file(
        blobs,
        f"{prefix}holdout.npz",
        prepared.holdout,
        rows=prepared.holdout_rows,
        class_counts=prepared.holdout_class_counts,
    )
    preview = await upload_file(
        blobs, f"{prefix}preview.json", preview_path, content_type="application/json"
    )
    schema = json.dumps([c.model_dump(mode="json") for c in prepared.columns]).encode()
    await blobs.put_bytes(schema_key(dataset_id), schema, content_type="application/json")
    validated = DatasetValidated(
        dataset_id=dataset_id,
        kind=prepared.kind,
        rows=prepared.rows,
        train_rows=prepared.train_rows,
        holdout_rows=prepared.holdout_rows,
        columns=prepared.columns,
        label_column=prepared.label_column,
        classes=prepared.classes,
        class_counts=prepared.class_counts,
        feature_spec=prepared.feature_spec,
        train_x=train_x,
        train_y=train_y,
        holdout=holdout,
        preview=preview,
        holdout_seed=prepared.holdout_seed,
        notes=prepared.notes,
    )
    saved = await app.execute(
        dataset_id, _while_validating(validated), causation=cause, actor=state.owner_id
    )
    if not saved.events:
        # Deleted (or decided by another instance) meanwhile: what is there is not ours.
        latest = saved.state
        if latest is None or latest.status == "deleted":
            await blobs.delete_prefix(prefix)
        return
    log.info("dataset validated", dataset_id=dataset_id, rows=prepared.rows)


async def _reject(
    app: DatasetApp, state: DatasetState, cause: RecordedEvent, error: InvalidDataset
) -> None:
    dataset_id = state.dataset_id
    await app.blobs.delete_prefix(raw_prefix(dataset_id))
    detail = error.detail if isinstance(error.detail, dict) else None
    rejected = DatasetRejected(
        dataset_id=dataset_id,
        code=error.code,
        message=error.message,
        detail={k: _scalar(v) for k, v in detail.items()} if detail else None,
    )
    saved = await app.execute(
        dataset_id, _while_validating(rejected), causation=cause, actor=state.owner_id
    )
    if not saved.events:
        return  # deleted, or decided by another instance, meanwhile
    log.info("dataset rejected", dataset_id=dataset_id, reason=error.code)


def _while_validating(
    outcome: DatasetValidated | DatasetRejected,
) -> Decide[DatasetState | None]:
    """Record the validation's outcome only on a dataset still waiting for one."""

    def decide(state: DatasetState | None) -> list[DatasetValidated | DatasetRejected]:
        return [outcome] if state is not None and state.status == "validating" else []

    return decide


class _Clock:
    """Seconds spent in each phase (for the logs)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[f"{name}_s"] = round(now - self._last, 3)
        self._last = now


def _scalar(value: object) -> str | int | float | None:
    if value is None or isinstance(value, str | int | float):
        return value
    return str(value)
