"""The orchestrator's settings (``PEERTRAIN_ORCHESTRATOR_*``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from peertrain.common.leases import LeaseSettings
from peertrain.common.settings import ServiceSettings

__all__ = ["OrchestratorSettings"]


class OrchestratorSettings(ServiceSettings, LeaseSettings):
    """Everything the orchestrator reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="PEERTRAIN_ORCHESTRATOR_", extra="ignore")

    service_name: str = "orchestrator"
    port: int = 8004
    api_prefix: str = "/api/jobs"

    queue_prefix: str = "orchestrator"
    """Prefix of this service's queue names (``<prefix>.dispatch``, ``<prefix>.peers``, ...)."""
    tick_s: float = Field(default=1.0, gt=0, le=60)
    """How often deadlines are checked."""
    max_round_attempts: int = Field(default=3, ge=1, le=100)
    """Attempts of one round that peers may fail (below ``min_peers``) before the job
    fails; attempts whose peers only went offline do not count."""
    round_retry_backoff_s: float = Field(default=2.0, ge=0, le=3600)
    """Wait before a failed round attempt's retry, doubled with each attempt..."""
    round_retry_backoff_max_s: float = Field(default=60.0, ge=0, le=3600)
    """... up to this."""
    presign_slack_s: int = Field(default=600, ge=60, le=86_400)
    """Presigned URLs stay valid this long after the round's deadline."""
    max_running_jobs: int = Field(default=20, ge=1, le=100_000)
    """Jobs one user (not an admin) may have sharding or running at once (403 beyond)."""
    update_overhead_bytes: int = Field(default=1024 * 1024, ge=1024)
    """Upload cap = 4 bytes per model parameter + this (safetensors header, metadata)."""
    report_linger_s: float = Field(default=0.2, ge=0, le=5)
    """Peers' reports on their tasks (accepted, progress, failed) are recorded together,
    one append for a job's reports of this long (0: one append each)."""
