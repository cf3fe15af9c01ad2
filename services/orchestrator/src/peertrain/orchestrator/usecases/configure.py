"""Configuring a sharded job: ``config.json`` into the bucket, then ``job.configured``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from peertrain.common.bus import PEERS
from peertrain.common.events.training import JobConfigured

from ..domain import Job
from ..domain.configuration import configure

if TYPE_CHECKING:
    from ..application import OrchestratorApp

__all__ = ["write_configuration"]


async def write_configuration(app: OrchestratorApp, job: Job) -> JobConfigured:
    """Write ``config.json`` for a sharded job; the ``job.configured`` describing it."""
    exchanges = {"tasks": PEERS.name, "telemetry": "peertrain.telemetry"}
    conf = configure(job, bucket=app.blobs.bucket, exchanges=exchanges, check_key=app.check_keys())
    await app.blobs.put_bytes(conf.key, conf.data, content_type="application/json")
    return conf.event
