"""``/api/models``: a job's model versions and its final model (the owner's or an admin's)."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response, status
from fastapi.responses import StreamingResponse

from peertrain.aggregator.api.deps import AggregatorDep
from peertrain.aggregator.api.views import (
    Evaluation,
    FinalPublic,
    JobModelsPublic,
    VersionPublic,
    WeightsAccepted,
)
from peertrain.aggregator.domain import (
    BEST,
    FinalNotExported,
    JobMemory,
    JobNotFound,
    best_version,
)
from peertrain.aggregator.usecases.downloads import Format, ModelFile, blob_chunks, version_file
from peertrain.aggregator.usecases.weights import receive_weights
from peertrain.common.app.responses import errors
from peertrain.common.security import CurrentUser, Principal
from peertrain.common.text import Name

__all__ = ["router"]

router = APIRouter(tags=["models"])

_errors = partial(errors, 401, 403, 404)
_WHY = {404: "No such job (or not yours)", 409: "The final model is not exported yet"}
_VERSION_WHY = {
    404: "No such job (or not yours), or no such version (`version_not_found`)",
    409: "`best` was asked for and no version is evaluated yet (`no_evaluated_version`)",
}
_FILE = {"content": {"application/octet-stream": {}}, "description": "The file"}
SHA256_HEADER = "X-Content-SHA256"
VERSION_HEADER = "X-Model-Version"


async def _visible(app: AggregatorDep, job_id: str, user: Principal) -> JobMemory:
    state = await app.read_only(job_id)
    if state.owner_id is None or (state.owner_id != user.subject and not user.is_admin):
        raise JobNotFound(f"no job {job_id!r}")
    return state


def _public(state: JobMemory) -> JobModelsPublic:
    versions = []
    for number in sorted(state.versions):
        info = state.versions[number]
        c, ev = info.created, info.evaluation
        versions.append(
            VersionPublic(
                version=c.version,
                key=c.key,
                sha256=c.sha256,
                size=c.size,
                created_at=info.created_at,
                strategy=c.strategy,
                parent_version=c.lineage.parent_version,
                peers=c.lineage.peers,
                shards=c.lineage.shards,
                updates=c.lineage.updates,
                evaluation=None
                if ev is None
                else Evaluation(
                    loss=ev.loss,
                    accuracy=ev.accuracy,
                    per_class_accuracy=ev.per_class_accuracy,
                    samples=ev.samples,
                    evaluated_at=info.evaluated_at,
                ),
            )
        )
    exported = state.exported
    return JobModelsPublic(
        job_id=state.job_id,
        rounds=state.configured.rounds if state.configured else None,
        versions=versions,
        latest_version=state.latest_version(),
        best_version=best_version(state.versions),
        final_available=exported is not None,
        final=None
        if exported is None
        else FinalPublic(**exported.model_dump(exclude={"job_id", "format"})),
    )


@router.post(
    "/weights",
    status_code=status.HTTP_201_CREATED,
    summary="Upload starting weights (safetensors, or a .pt state dict)",
    responses=errors(
        401, 408, 413, why={413: "Over the size cap", 422: "Not weights a job can start from"}
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            },
        }
    },
)
async def upload_weights(
    request: Request,
    response: Response,
    user: CurrentUser,
    app: AggregatorDep,
    name: Annotated[Name | None, Query(description="A name to know them by")] = None,
) -> WeightsAccepted:
    """The body is the file itself: a safetensors file, or a ``.pt`` file holding a state
    dict (``torch.save(model.state_dict(), f)``, or a ``final.pt``), read with
    ``torch.load(weights_only=True)``: anything but tensors is refused unread. Stored
    as safetensors; a job starts from them with ``init_weights``, checked then against
    its model (names, shapes, dtypes)."""
    length = request.headers.get("content-length")
    uploaded = await receive_weights(
        app,
        request.stream(),
        owner_id=user.subject,
        name=name or "",
        content_length=int(length) if length and length.isdigit() else None,
    )
    response.headers["Location"] = f"{app.settings.api_prefix}/weights/{uploaded.weights_id}"
    return WeightsAccepted.of(uploaded)


@router.get(
    "/{job_id}",
    summary="A job's model versions, their metrics, and whether the final model exists",
    responses=_errors(why=_WHY),
)
async def get_models(job_id: str, user: CurrentUser, app: AggregatorDep) -> JobModelsPublic:
    """Versions in order, each with its key, sha256, time and holdout metrics."""
    return _public(await _visible(app, job_id, user))


@router.get(
    "/{job_id}/final",
    summary="Download the final model",
    responses={
        **_errors(409, why=_WHY),
        200: _FILE,
    },
    response_class=StreamingResponse,
)
async def get_final(
    job_id: str,
    user: CurrentUser,
    app: AggregatorDep,
    format: Annotated[Format, Query()] = "pt",
) -> StreamingResponse:
    """``final.pt`` (``torch.load(f, weights_only=True)``) or ``final.safetensors``."""
    state = await _visible(app, job_id, user)
    exported = state.exported
    if exported is None:
        raise FinalNotExported(f"job {job_id!r} has no final model yet")
    key, sha = (
        (exported.pt_key, exported.pt_sha256)
        if format == "pt"
        else (exported.safetensors_key, exported.safetensors_sha256)
    )
    return StreamingResponse(
        await blob_chunks(app, key),  # BlobNotFound surfaces here, before any header
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": f'attachment; filename="{job_id}-final.{format}"',
            SHA256_HEADER: sha,
        },
    )


@router.get(
    "/{job_id}/versions/{version}",
    summary="Download one model version, or the best one",
    responses={**_errors(409, why=_VERSION_WHY), 200: _FILE},
    response_class=StreamingResponse,
)
async def get_version(
    job_id: str,
    version: Annotated[
        str,
        Path(
            pattern=r"^(best|[0-9]{1,9})$",
            description="A version number (0 is the starting model), or `best`",
        ),
    ],
    user: CurrentUser,
    app: AggregatorDep,
    format: Annotated[Format, Query()] = "pt",
) -> StreamingResponse:
    """Any model version of the job, whatever its state (running, completed, cancelled,
    failed), as a file like ``final.pt`` or ``final.safetensors``: the same specs and
    preprocessing ride along, so ``peertrain predict`` and ``peertrain convert`` take it.

    ``best`` is the evaluated version with the highest holdout accuracy; ties go to the
    lower holdout loss, then to the later version; versions not evaluated yet (or found
    non-finite) never count. The version sent is in ``X-Model-Version``, the file's
    sha256 in ``X-Content-SHA256``.
    """
    state = await _visible(app, job_id, user)
    which = BEST if version == BEST else int(version)
    return _file_response(await version_file(app, state, which, format))


def _file_response(file: ModelFile) -> StreamingResponse:
    headers = {
        "Content-Disposition": f'attachment; filename="{file.filename}"',
        SHA256_HEADER: file.sha256,
        VERSION_HEADER: str(file.version),
    }
    if file.size is not None:
        headers["Content-Length"] = str(file.size)
    return StreamingResponse(file.chunks, media_type="application/octet-stream", headers=headers)
