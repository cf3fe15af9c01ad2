"""``/api/datasets``: upload, list, read, preview, delete (the caller's own datasets)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from peertrain.common.app import Page, PagingDep
from peertrain.common.events.datasets import MISSING_TOKENS
from peertrain.common.security import CurrentUser
from peertrain.dataset.api.deps import DatasetDep
from peertrain.dataset.api.responses import errors
from peertrain.dataset.api.views import DatasetAccepted, DatasetPublic, Preview
from peertrain.dataset.domain.holdout import MAX_HOLDOUT_SEED
from peertrain.dataset.usecases.manage import delete_dataset, get_dataset, preview
from peertrain.dataset.usecases.upload import receive_upload

__all__ = ["router"]

router = APIRouter(tags=["datasets"])

_UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": ".csv, .csv.gz or .zip (recognised by content)",
                        },
                        "label_column": {
                            "type": "string",
                            "description": "default: the last column",
                        },
                        "name": {"type": "string", "maxLength": 200},
                        "holdout_fraction": {
                            "type": "number",
                            "exclusiveMinimum": 0,
                            "maximum": 0.5,
                            "default": 0.1,
                        },
                        "holdout_seed": {
                            "type": "integer",
                            "minimum": 0,
                            "maximum": MAX_HOLDOUT_SEED,
                            "description": "the holdout's seed: the same split for every "
                            "upload of a file (default: one drawn from the dataset id)",
                        },
                        "image_size": {
                            "type": "string",
                            "pattern": "^[0-9]+x[0-9]+$",
                            "description": "image datasets: WIDTHxHEIGHT (default: the most "
                            "common size)",
                        },
                        "image_fit": {
                            "type": "string",
                            "enum": ["crop", "stretch"],
                            "default": "crop",
                            "description": "image datasets: how an image of another shape "
                            "becomes WIDTHxHEIGHT: crop (resized with its aspect ratio kept, "
                            "centre cut out) or stretch",
                        },
                        "missing_values": {
                            "type": "string",
                            "description": "tables: the cell values that mean missing, "
                            "comma-separated (trimmed, compared ignoring case; the empty "
                            "cell always is). Replaces the default list: "
                            + ", ".join(repr(t) for t in MISSING_TOKENS if t),
                        },
                    },
                }
            }
        },
    }
}


@router.post(
    "/",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Upload a dataset (streamed to storage; validation follows)",
    responses=errors(408, 413, 415),
    openapi_extra=_UPLOAD_BODY,
)
async def upload(
    request: Request, response: Response, user: CurrentUser, app: DatasetDep
) -> DatasetAccepted:
    """The body streams to object storage as it arrives, with its SHA-256 computed on the
    way; a body over the cap is refused (413) as soon as it passes the cap, one that
    would pass the user's quota (datasets kept, bytes stored) with 403, and one that
    does not arrive in time with 408."""
    length = request.headers.get("content-length")
    event = await receive_upload(
        app,
        request.stream(),
        content_type=request.headers.get("content-type"),
        content_length=int(length) if length and length.isdigit() else None,
        owner_id=user.subject,
    )
    dataset_id = event.data.dataset_id  # type: ignore[union-attr]
    response.headers["Location"] = f"{app.settings.api_prefix}/{dataset_id}"
    return DatasetAccepted(dataset_id=dataset_id)


@router.get("/", summary="The caller's datasets, newest first", responses=errors())
async def list_datasets(
    user: CurrentUser, app: DatasetDep, paging: PagingDep
) -> Page[DatasetPublic]:
    """Validating, validated and rejected datasets (not deleted ones)."""
    docs = await app.views.list_for(user.subject, limit=paging.fetch, offset=paging.offset)
    return Page[DatasetPublic].of([DatasetPublic.from_doc(d) for d in docs], paging)


@router.get("/{dataset_id}", summary="One dataset", responses=errors(404))
async def read_dataset(dataset_id: str, user: CurrentUser, app: DatasetDep) -> DatasetPublic:
    """Status (``validating``, ``validated``, ``rejected`` with the reason), counts, schema,
    label column and classes."""
    return DatasetPublic.from_doc(await get_dataset(app, dataset_id, user.subject))


@router.get("/{dataset_id}/preview", summary="The first rows", responses=errors(404, 409))
async def read_preview(dataset_id: str, user: CurrentUser, app: DatasetDep) -> Preview:
    """The first rows as uploaded (trimmed); image datasets list their first files."""
    return Preview.model_validate(await preview(app, dataset_id, user.subject))


@router.delete(
    "/{dataset_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Delete a dataset and its objects",
    responses=errors(404, 409),
)
async def remove_dataset(dataset_id: str, user: CurrentUser, app: DatasetDep) -> Response:
    """The owner only. Shards already written for jobs stay with those jobs."""
    await delete_dataset(app, dataset_id, user.subject)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# The gateway routes ``/api/datasets/`` (with the slash); answer the bare prefix too,
# for callers that reach the service directly (no redirect: a 307 would make a client
# send a large upload twice).
router.add_api_route(
    "",
    upload,
    methods=["POST"],
    status_code=status.HTTP_202_ACCEPTED,
    include_in_schema=False,
)
router.add_api_route("", list_datasets, methods=["GET"], include_in_schema=False)
