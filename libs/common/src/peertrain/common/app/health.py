"""``/healthz`` (the process answers) and ``/readyz`` (MongoDB, RabbitMQ and S3 answer)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from .context import ServiceContext
from .errors import error_response
from .responses import ErrorResponse

__all__ = ["Health", "Readiness", "health_router"]


class Health(BaseModel):
    """``/healthz``: the process answers."""

    status: Literal["ok"]


class Readiness(BaseModel):
    """``/readyz``: every dependency answers (``"ok"`` each)."""

    status: Literal["ready"]
    checks: dict[str, str]


async def _probe(check: Awaitable[Any], seconds: float) -> str | None:
    try:
        result = await asyncio.wait_for(check, seconds)
    except Exception as exc:
        return repr(exc)[:300] or type(exc).__name__
    if result is False:
        return "not connected"
    return None


async def readiness(ctx: ServiceContext) -> dict[str, str | None]:
    """Each dependency's problem, or ``None`` where it answers."""
    timeout = ctx.settings.mongo_timeout_s
    checks: dict[str, Awaitable[Any]] = {
        "mongodb": ctx.mongo.admin.command("ping"),
        "rabbitmq": ctx.broker.ping(timeout=timeout),
    }
    if ctx.blobs is not None:
        checks["s3"] = ctx.blobs.check()
    names = list(checks)
    results = await asyncio.gather(*(_probe(checks[n], timeout) for n in names))
    return dict(zip(names, results, strict=True))


def health_router() -> APIRouter:
    """Routes for liveness and readiness (mounted at the root and under the API prefix)."""
    router = APIRouter(tags=["health"])

    @router.get("/healthz", summary="The process is alive")
    async def healthz() -> Health:
        return Health(status="ok")

    @router.get(
        "/readyz",
        summary="MongoDB, RabbitMQ and S3 all answer",
        response_model=Readiness,
        responses={
            503: {
                "model": ErrorResponse,
                "description": "Starting, or a dependency does not answer (detail: each "
                "dependency's problem, null where it answers)",
            }
        },
    )
    async def readyz(request: Request) -> JSONResponse:
        ctx: ServiceContext | None = getattr(request.app.state, "ctx", None)
        if ctx is None:
            return error_response(503, "unavailable", "service is starting")
        problems = await readiness(ctx)
        if any(problems.values()):
            down = sorted(k for k, v in problems.items() if v)
            return error_response(
                503, "unavailable", f"not ready: {', '.join(down)} not answering", problems
            )
        return JSONResponse({"status": "ready", "checks": {k: "ok" for k in problems}})

    return router
