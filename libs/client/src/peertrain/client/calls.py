"""Every API request the SDK makes, as data: both clients send the same ``Call``s.

Paths are relative to the API's base URL (the gateway). Routes and bodies follow the
services' own routers (auth, registry, dataset) and the orchestrator/aggregator
contract (jobs, models).

Every list answers one page, ``{"items": [...], "next_offset": n | null}``, of the
``limit`` items at ``offset``; :func:`next_page` gives a page's items and the call for
the next one, which the clients follow to the end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import quote

from .errors import ApiError

__all__ = ["AUTH", "DATASETS", "JOBS", "MODELS", "REGISTRY", "Call", "next_page"]

AUTH = "/api/auth"
REGISTRY = "/api/registry"
DATASETS = "/api/datasets"
JOBS = "/api/jobs"
MODELS = "/api/models"

Answer = Literal["json", "bytes", "none"]


@dataclass(frozen=True)
class Call:
    """One request: method, path, body, and what the answer is.

    ``retry`` marks a request that is safe to send twice although its method is not
    idempotent (a dry run): see :mod:`peertrain.client.retry`.
    """

    method: str
    path: str
    json: Any = None
    form: Mapping[str, str] | None = None
    content: bytes | None = None
    """A raw body (``application/octet-stream``)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    auth: bool = True
    answer: Answer = "json"
    retry: bool = False


def next_page(call: Call, answer: Any) -> tuple[list[dict[str, Any]], Call | None]:
    """The items of the page ``call`` answered, and the call for the next page (``None``
    after the last).

    Raises
    ------
    ApiError
        ``bad_response``: the answer is not a page.
    """
    items = answer.get("items") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise ApiError(
            "the API answered something that is not a page of items",
            status=200,
            code="bad_response",
            method=call.method,
            url=call.path,
        )
    following = answer.get("next_offset")
    offset = call.params.get("offset") or 0
    if not isinstance(following, int) or following <= offset:
        return items, None
    return items, replace(call, params={**call.params, "offset": following})


def _id(value: str) -> str:
    return quote(str(value), safe="")


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def register(username: str, password: str) -> Call:
    """Create an account (201: ``{"id", "username", "roles"}``)."""
    body = {"username": username, "password": password}
    return Call("POST", f"{AUTH}/register", json=body, auth=False)


def token(username: str, password: str) -> Call:
    """OAuth2 password login: a token pair."""
    form = {"grant_type": "password", "username": username, "password": password}
    return Call("POST", f"{AUTH}/token", form=form, auth=False)


def refresh(refresh_token: str) -> Call:
    """Trade the refresh token (spent by this) for a new pair."""
    return Call("POST", f"{AUTH}/refresh", json={"refresh_token": refresh_token}, auth=False)


def logout(refresh_token: str) -> Call:
    """End the refresh token's session (always 204)."""
    body = {"refresh_token": refresh_token}
    return Call("POST", f"{AUTH}/logout", json=body, auth=False, answer="none")


def me() -> Call:
    """The calling user."""
    return Call("GET", f"{AUTH}/me")


def create_enrollment(ttl_s: int | None = None) -> Call:
    """A one-time enrollment token for a new peer."""
    return Call("POST", f"{AUTH}/peer-enrollments", json={"ttl_s": ttl_s} if ttl_s else None)


def list_peers(
    status: str | None = None,
    device: str | None = None,
    min_memory_gb: float | None = None,
    owner: str | None = None,
) -> Call:
    """Peers the caller may see, with liveness and device specs (registry); a page."""
    params = _params(status=status, device=device, min_memory_gb=min_memory_gb, owner=owner)
    return Call("GET", f"{REGISTRY}/peers", params=params)


def get_peer(peer_id: str) -> Call:
    """One peer (registry)."""
    return Call("GET", f"{REGISTRY}/peers/{_id(peer_id)}")


def update_peer(peer_id: str, *, disabled: bool | None = None, shared: bool | None = None) -> Call:
    """Disable (or enable) or share a peer (its owner or an admin); answers the peer."""
    body = _params(disabled=disabled, shared=shared)
    return Call("PATCH", f"{REGISTRY}/peers/{_id(peer_id)}", json=body)


def remove_peer(peer_id: str) -> Call:
    """Remove a peer for good (204): its broker access ends at once."""
    return Call("DELETE", f"{REGISTRY}/peers/{_id(peer_id)}", answer="none")


def health() -> Call:
    """The auth service's liveness through the gateway: any answer means it is reachable."""
    return Call("GET", f"{AUTH}/healthz", auth=False, answer="none")


def list_datasets(limit: int | None = None, offset: int | None = None) -> Call:
    """The caller's datasets, newest first; a page."""
    return Call("GET", DATASETS, params=_params(limit=limit, offset=offset))


def get_dataset(dataset_id: str) -> Call:
    """One dataset, with its validation status."""
    return Call("GET", f"{DATASETS}/{_id(dataset_id)}")


def delete_dataset(dataset_id: str) -> Call:
    """Delete a dataset and its objects (204; the owner only)."""
    return Call("DELETE", f"{DATASETS}/{_id(dataset_id)}", answer="none")


def preview_dataset(dataset_id: str) -> Call:
    """The first rows as uploaded: ``{"kind", "columns", "rows"}``."""
    return Call("GET", f"{DATASETS}/{_id(dataset_id)}/preview")


def create_job(spec: Mapping[str, Any], *, dry_run: bool = False) -> Call:
    """A new training job (201: ``{"job_id"}``); with ``dry_run`` only checked, nothing
    created (200: the job it would create), so safe to send twice."""
    if dry_run:
        return Call("POST", JOBS, json=dict(spec), params={"dry_run": "true"}, retry=True)
    return Call("POST", JOBS, json=dict(spec))


def job_schema() -> Call:
    """The JSON Schema of a job request (no login needed)."""
    return Call("GET", f"{JOBS}/schema", auth=False)


def job_config(job_id: str) -> Call:
    """The job's ``config.json`` (404 until its data is sharded)."""
    return Call("GET", f"{JOBS}/{_id(job_id)}/config")


def list_jobs(
    limit: int | None = None,
    offset: int | None = None,
    *,
    state: str | None = None,
    dataset_id: str | None = None,
    name: str | None = None,
) -> Call:
    """The caller's jobs, newest first; a page (only those in ``state``, on
    ``dataset_id``, with ``name`` in their name, when given)."""
    params = _params(limit=limit, offset=offset, state=state, dataset_id=dataset_id, name=name)
    return Call("GET", JOBS, params=params)


def get_job(job_id: str) -> Call:
    """One job: state, rounds, peers, tasks, latest metrics."""
    return Call("GET", f"{JOBS}/{_id(job_id)}")


def job_model(job_id: str) -> Call:
    """The job's model as built for its data: parameters, every layer with its output
    shape."""
    return Call("GET", f"{JOBS}/{_id(job_id)}/model")


def job_metrics(job_id: str) -> Call:
    """Per-round and per-peer metrics of a job."""
    return Call("GET", f"{JOBS}/{_id(job_id)}/metrics")


def job_events(job_id: str, offset: int | None = None) -> Call:
    """A job's event history, oldest first; a page (from the ``offset``-th event)."""
    return Call("GET", f"{JOBS}/{_id(job_id)}/events", params=_params(offset=offset))


def cancel_job(job_id: str) -> Call:
    """Ask for a job to stop (202)."""
    return Call("POST", f"{JOBS}/{_id(job_id)}/cancel")


def model_versions(job_id: str) -> Call:
    """A job's model versions."""
    return Call("GET", f"{MODELS}/{_id(job_id)}")


def upload_weights(data: bytes, *, name: str | None = None) -> Call:
    """Starting weights (201: ``{"weights_id", "tensors", ...}``): a safetensors file's
    bytes, or a ``.pt`` state dict's."""
    return Call("POST", f"{MODELS}/weights", content=data, params=_params(name=name))


def final_model(job_id: str, fmt: str = "pt") -> Call:
    """The final model's bytes (``pt`` or ``safetensors``)."""
    return Call("GET", f"{MODELS}/{_id(job_id)}/final", params={"format": fmt}, answer="bytes")


def model_file(job_id: str, version: int | str | None = None, fmt: str = "pt") -> Call:
    """A model file's bytes (``pt`` or ``safetensors``): the final model when
    ``version`` is ``None``, else that version (a number, or ``"best"``)."""
    if version is None:
        return final_model(job_id, fmt)
    path = f"{MODELS}/{_id(job_id)}/versions/{_id(str(version))}"
    return Call("GET", path, params={"format": fmt}, answer="bytes")
