"""Configuring a sharded job: ``config.json`` into the bucket, then ``job.configured``."""

from __future__ import annotations

from peertrain.common.bus import PEERS
from peertrain.common.events.training import JobConfigured

from ..domain import Job
from ..domain.configuration import configure
from .context import OrchestratorContext

__all__ = ["write_configuration"]


async def write_configuration(octx: OrchestratorContext, job: Job) -> JobConfigured:
    """Write ``config.json`` for a sharded job; the ``job.configured`` describing it."""
    exchanges = {"tasks": PEERS.name, "telemetry": "peertrain.telemetry"}
    conf = configure(job, bucket=octx.blobs.bucket, exchanges=exchanges)
    await octx.blobs.put_bytes(conf.key, conf.data, content_type="application/json")
    return conf.event
