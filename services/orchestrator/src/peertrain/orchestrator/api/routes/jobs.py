"""``/api/jobs``: create (or check), list, inspect, cancel; the request's JSON Schema."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from peertrain.common.app import Page, PagingDep
from peertrain.common.app.responses import errors
from peertrain.common.blobs import BlobNotFound
from peertrain.common.security import CurrentUser
from peertrain.common.specs import ModelSummary

from ...domain import Job
from ...domain.errors import JobNotFound
from ...domain.job import JobState
from ...domain.job_request import JobRequest
from ...usecases import jobs
from ..deps import OrchestratorDep
from ..views import (
    EventPublic,
    JobAccepted,
    JobCancelling,
    JobChecked,
    JobDetail,
    JobMetrics,
    JobSummary,
)

__all__ = ["router"]

router = APIRouter(tags=["jobs"])

JOB_REQUEST_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    **JobRequest.model_json_schema(),
    "title": "PeerTrain job",
}

_WHY = {
    403: "A peer's token (this is a user's route)",
    404: "No such job (or not yours)",
}


@router.post(
    "",
    status_code=201,
    response_model=JobAccepted,
    summary="Create a training job (or only check it: dry_run=true)",
    responses={
        200: {
            "model": JobChecked,
            "description": "dry_run=true: every check passed; nothing was created",
        },
        **errors(
            401,
            403,
            404,
            409,
            why={
                403: "A peer's token, or the running-jobs quota is used up (quota_exceeded)",
                404: "No such dataset (or not yours)",
                409: "The dataset is not validated, or the peers cannot take part (unknown, "
                "offline, disabled, outdated, too few for the selection): each one named "
                "with why in detail.peers, any other problem in detail.problems",
                422: "The request is not valid: every problem at once, one "
                "{loc, msg} item each (a spec, a peer list, the model's size)",
            },
        ),
    },
)
async def create_job(
    body: JobRequest,
    user: CurrentUser,
    orch: OrchestratorDep,
    dry_run: Annotated[
        bool,
        Query(
            description="Only check the request (every check a creation makes): "
            "answers 200 with the job it would create; no job, no event"
        ),
    ] = False,
) -> Response | JobAccepted:
    """Checked against the datasets and peers the orchestrator knows; sharding follows."""
    if dry_run:
        checked = JobChecked.of(await jobs.check_job(orch, body, user))
        return JSONResponse(checked.model_dump(mode="json"), status_code=200)
    job = await jobs.create_job(orch, body, user)
    return JobAccepted(job_id=job.job_id)


@router.get(
    "/schema",
    summary="The JSON Schema of a job request (job.yaml / job.json)",
    responses=errors(),
    response_model=dict[str, Any],
)
async def job_schema() -> dict[str, Any]:
    """Public (no login): editors and ``peertrain job schema`` check job files with it."""
    return JOB_REQUEST_SCHEMA


@router.get(
    "",
    summary="Your jobs, newest first (every job, for an admin)",
    responses=errors(401, 403, why=_WHY),
)
async def list_jobs(
    user: CurrentUser,
    orch: OrchestratorDep,
    paging: PagingDep,
    state: Annotated[JobState | None, Query(description="Only jobs in this state")] = None,
    dataset_id: Annotated[str | None, Query(description="Only jobs on this dataset")] = None,
    name: Annotated[
        str | None, Query(description="Only jobs whose name holds this (any case)")
    ] = None,
) -> Page[JobSummary]:
    """One line per job: state, round, latest holdout metrics."""
    query = jobs.JobQuery(state=state, dataset_id=dataset_id, name=name)
    found = paging.window(jobs.visible_jobs(orch, user, query))
    return Page[JobSummary].of([JobSummary.of(j) for j in found], paging)


@router.get(
    "/{job_id}",
    summary="One job: state, round, peers and tasks, latest metrics",
    responses=errors(401, 403, 404, why=_WHY),
)
async def get_job(job_id: str, user: CurrentUser, orch: OrchestratorDep) -> JobDetail:
    """A failed task shows the peer's error and traceback."""
    return JobDetail.of(await _current(orch, job_id, user))


@router.get(
    "/{job_id}/model",
    summary="The job's model: its layers, their output shapes and parameters",
    responses=errors(
        401, 403, 404, why={**_WHY, 404: "No such job (or not yours), or its dataset is gone"}
    ),
)
async def get_model(job_id: str, user: CurrentUser, orch: OrchestratorDep) -> ModelSummary:
    """Computed from the job's model spec and its data's shape, without torch: a layer
    graph's nodes, a named architecture's graph, the zoo models' layers."""
    return jobs.job_model(orch, await _current(orch, job_id, user))


@router.get(
    "/{job_id}/metrics",
    summary="Per round holdout metrics, per peer epoch metrics",
    responses=errors(401, 403, 404, why=_WHY),
)
async def get_metrics(job_id: str, user: CurrentUser, orch: OrchestratorDep) -> JobMetrics:
    """Holdout loss and accuracy of each model version; training metrics peers reported."""
    return JobMetrics.of(await _current(orch, job_id, user))


@router.get(
    "/{job_id}/events",
    summary="The job's events (its lineage), in log order",
    responses=errors(401, 403, 404, why=_WHY),
)
async def get_events(
    job_id: str, user: CurrentUser, orch: OrchestratorDep, paging: PagingDep
) -> Page[EventPublic]:
    """Job, sharding and model events."""
    job = jobs.get_job(orch, job_id, user)
    found = paging.window(await jobs.job_events(orch, job))
    return Page[EventPublic].of([EventPublic.of(e) for e in found], paging)


@router.get(
    "/{job_id}/config",
    summary="The job's config.json",
    response_class=Response,
    responses={
        **errors(401, 403, 404, why={**_WHY, 404: "No such job (or not yours), or no config yet"}),
        200: {
            "description": "The config.json peers and the aggregator train from",
            "content": {"application/json": {"schema": {"type": "object"}}},
        },
    },
)
async def get_config(job_id: str, user: CurrentUser, orch: OrchestratorDep) -> Response:
    """Written once the data is sharded (404 before)."""
    job = await _current(orch, job_id, user)
    if job.configured is None:
        raise JobNotFound(f"job {job_id!r} has no config yet (state: {job.state})")
    try:
        data = await orch.blobs.get_bytes(job.configured.config_key)
    except BlobNotFound as exc:  # pragma: no cover - written before job.configured
        raise JobNotFound(f"job {job_id!r} has no config") from exc
    json.loads(data)  # it is ours, but never serve something that is not JSON
    return Response(content=data, media_type="application/json")


@router.post(
    "/{job_id}/cancel",
    status_code=202,
    summary="Cancel a running job",
    responses=errors(401, 403, 404, 409, why={**_WHY, 409: "The job already ended"}),
)
async def cancel_job(job_id: str, user: CurrentUser, orch: OrchestratorDep) -> JobCancelling:
    """Peers get ``peer.<id>.cancel`` and stop their task."""
    job = await jobs.cancel_job(orch, job_id, user)
    return JobCancelling(job_id=job.job_id, state=job.state)


async def _current(orch: OrchestratorDep, job_id: str, user: CurrentUser) -> Job:
    """The job as its streams hold it now, for a caller who may see it (without the
    service's lock: :func:`~..usecases.jobs.read_job`)."""
    return await jobs.read_job(orch, job_id, user)
