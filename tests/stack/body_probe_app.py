"""A minimal service behind the gateway's ``/api/jobs/`` (the orchestrator's port): the
app factory and one JSON route, for the request-body deadline test.

Usage: python body_probe_app.py (``PEERTRAIN_*`` settings from the environment, e.g.
``PEERTRAIN_REQUEST_BODY_TIMEOUT_S``).
"""

from __future__ import annotations

from typing import Any

import uvicorn
from fastapi import APIRouter

from peertrain.common.app import create_app
from peertrain.common.settings import ServiceSettings
from peertrain.testkit.common import PLATFORM_PORTS

router = APIRouter()


@router.post("/echo")
async def echo(payload: dict[str, Any]) -> dict[str, Any]:
    """Any JSON route: FastAPI reads the whole body before the handler runs."""
    return payload


if __name__ == "__main__":
    settings = ServiceSettings(
        service_name="probe",
        port=PLATFORM_PORTS["orchestrator"],
        api_prefix="/api/jobs",
        relay_enabled=False,
    )
    app = create_app(settings, routers=[router], use_blobs=False)
    uvicorn.run(app, host="127.0.0.1", port=settings.port, log_config=None)
