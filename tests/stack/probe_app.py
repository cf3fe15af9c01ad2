"""A minimal PeerTrain service for the readiness test: the app factory and nothing else.

Usage: python probe_app.py PORT
"""

from __future__ import annotations

import sys

import uvicorn

from peertrain.common.app import create_app
from peertrain.common.settings import ServiceSettings

if __name__ == "__main__":
    port = int(sys.argv[1])
    settings = ServiceSettings(
        service_name="probe", port=port, api_prefix="/api/probe", relay_enabled=False
    )
    uvicorn.run(create_app(settings), host="127.0.0.1", port=port, log_config=None)
