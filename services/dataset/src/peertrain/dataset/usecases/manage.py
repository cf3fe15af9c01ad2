"""Reading and deleting datasets (the owner's view)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from peertrain.common.blobs import BlobNotFound
from peertrain.common.eventlog import ConcurrencyError
from peertrain.common.events.datasets import DatasetDeleted
from peertrain.dataset.domain.dataset import DatasetState, raw_prefix, schema_key
from peertrain.dataset.domain.errors import DatasetNotFound, DatasetNotReady

if TYPE_CHECKING:
    from peertrain.dataset.application import DatasetApp


__all__ = ["delete_dataset", "get_dataset", "preview"]

Doc = dict[str, Any]


async def get_dataset(app: DatasetApp, dataset_id: str, user_id: str) -> Doc:
    """The read model's document, if the caller owns the dataset (else 404)."""
    doc = await app.views.get(dataset_id)
    if doc is None:
        # Appended but not projected yet (or the projection lags): fold the log.
        state = await app.load(dataset_id)
        if state is not None and state.visible_to(user_id):
            doc = {
                "_id": dataset_id,
                "owner_id": state.owner_id,
                "name": state.uploaded.name,
                "filename": state.uploaded.filename,
                "size": state.uploaded.raw.size,
                "sha256": state.uploaded.raw.sha256,
                "status": state.status,
                "label_column": state.uploaded.label_column,
            }
    if doc is None or doc.get("owner_id") != user_id or doc.get("status") == "deleted":
        raise DatasetNotFound(dataset_id)
    if doc.get("status") == "validated" and doc.get("schema") is None:
        try:  # a wide table: its schema is kept in the bucket
            doc["schema"] = json.loads(await app.blobs.get_bytes(schema_key(dataset_id)))
        except BlobNotFound:
            raise DatasetNotFound(dataset_id) from None
    return doc


async def preview(app: DatasetApp, dataset_id: str, user_id: str) -> Any:
    """The first rows, as written by validation."""
    doc = await get_dataset(app, dataset_id, user_id)
    key = doc.get("preview_key")
    if doc.get("status") != "validated" or not key:
        raise DatasetNotReady(
            f"dataset {dataset_id!r} is {doc.get('status')}: a preview exists once it is validated",
            detail={"status": doc.get("status")},
        )
    try:
        return json.loads(await app.blobs.get_bytes(key))
    except BlobNotFound:
        raise DatasetNotFound(dataset_id) from None


async def delete_dataset(app: DatasetApp, dataset_id: str, user_id: str) -> None:
    """Append ``dataset.deleted`` and remove every object under ``datasets/<id>/``."""

    def decide(state: DatasetState | None) -> list[DatasetDeleted]:
        if state is None or not state.visible_to(user_id):
            raise DatasetNotFound(dataset_id)
        return [DatasetDeleted(dataset_id=dataset_id, owner_id=user_id)]

    try:  # validation may finish meanwhile: then it is decided again on the new state
        await app.execute(
            dataset_id, decide, retries=4, refresh=True, actor=user_id, correlation_id=dataset_id
        )
    except ConcurrencyError:
        raise DatasetNotReady(f"dataset {dataset_id!r} keeps changing; try again") from None
    await app.blobs.delete_prefix(raw_prefix(dataset_id))
