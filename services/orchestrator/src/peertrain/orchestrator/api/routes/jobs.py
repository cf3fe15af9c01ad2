"""``/api/jobs``: create, list, inspect, cancel."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Response

from peertrain.common.blobs import BlobNotFound
from peertrain.common.security import CurrentUser

from ...domain.errors import JobNotFound
from ...models import JobRequest
from ...usecases import jobs
from ..deps import OrchestratorDep
from ..views import event_view, job_detail, job_metrics, job_summary

__all__ = ["router"]

router = APIRouter(tags=["jobs"])


@router.post("", status_code=201, summary="Create a training job")
async def create_job(body: JobRequest, user: CurrentUser, orch: OrchestratorDep) -> dict[str, str]:
    """Checked against the datasets and peers the orchestrator knows; sharding follows."""
    job = await jobs.create_job(orch, body, user)
    return {"job_id": job.job_id}


@router.get("", summary="Your jobs, newest first (every job, for an admin)")
async def list_jobs(user: CurrentUser, orch: OrchestratorDep) -> dict[str, Any]:
    """One line per job: state, round, latest holdout metrics."""
    return {"items": [job_summary(j) for j in jobs.visible_jobs(orch, user)]}


@router.get("/{job_id}", summary="One job: state, round, peers and tasks, latest metrics")
async def get_job(job_id: str, user: CurrentUser, orch: OrchestratorDep) -> dict[str, Any]:
    """A failed task shows the peer's error and traceback."""
    return job_detail(jobs.get_job(orch, job_id, user))


@router.get("/{job_id}/metrics", summary="Per round holdout metrics, per peer epoch metrics")
async def get_metrics(job_id: str, user: CurrentUser, orch: OrchestratorDep) -> dict[str, Any]:
    """Holdout loss and accuracy of each model version; training metrics peers reported."""
    return job_metrics(jobs.get_job(orch, job_id, user))


@router.get("/{job_id}/events", summary="The job's events (its lineage), in log order")
async def get_events(job_id: str, user: CurrentUser, orch: OrchestratorDep) -> dict[str, Any]:
    """Job, sharding and model events."""
    job = jobs.get_job(orch, job_id, user)
    return {"items": [event_view(e) for e in await jobs.job_events(orch, job)]}


@router.get("/{job_id}/config", summary="The job's config.json")
async def get_config(job_id: str, user: CurrentUser, orch: OrchestratorDep) -> Response:
    """Written once the data is sharded (404 before)."""
    job = jobs.get_job(orch, job_id, user)
    if job.configured is None:
        raise JobNotFound(f"job {job_id!r} has no config yet (state: {job.state})")
    try:
        data = await orch.blobs.get_bytes(job.configured.config_key)
    except BlobNotFound as exc:  # pragma: no cover - written before job.configured
        raise JobNotFound(f"job {job_id!r} has no config") from exc
    json.loads(data)  # it is ours, but never serve something that is not JSON
    return Response(content=data, media_type="application/json")


@router.post("/{job_id}/cancel", status_code=202, summary="Cancel a running job")
async def cancel_job(job_id: str, user: CurrentUser, orch: OrchestratorDep) -> dict[str, Any]:
    """Peers get ``peer.<id>.cancel`` and stop their task."""
    job = await jobs.cancel_job(orch, job_id, user)
    return {"job_id": job.job_id, "state": job.state}
