"""The aggregator's settings (``PEERTRAIN_AGGREGATOR_*``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from peertrain.common.leases import LeaseSettings
from peertrain.common.settings import ServiceSettings

__all__ = ["AggregatorSettings", "MiB"]

MiB = 1024 * 1024


class AggregatorSettings(ServiceSettings, LeaseSettings):
    """Everything the aggregator reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="PEERTRAIN_AGGREGATOR_", extra="ignore")

    service_name: str = "aggregator"
    port: int = 8005
    api_prefix: str = "/api/models"

    queue_prefix: str = "aggregator"
    """Prefix of this service's queue names (``<prefix>.feed.<instance>``, ``<prefix>.updates``)."""
    tick_s: float = Field(default=1.0, gt=0, le=60)
    """How often leases are renewed and jobs of stopped instances taken over."""
    stall_grace_s: float = Field(default=30.0, gt=0, le=3600)
    """A held job that looks stalled this long (model work not done, or a round open
    past its deadline) is read on from the log and reconciled: what it waits for (a
    ``round.closed``) may have been lost on the way here."""
    work_dir: Path = Path(tempfile.gettempdir()) / "peertrain-aggregator"
    """Scratch space (the robust strategies spill a round's updates here)."""

    max_update_bytes: int = Field(default=1024 * MiB, ge=1)
    """Hard cap on an update object, whatever the model's size."""
    delta_cache_bytes: int = Field(default=256 * MiB, ge=0)
    """Memory for accepted updates' decoded deltas, the most recent first: a round made
    again (clipping, an asynchronous buffer) takes them from here instead of the bucket
    (0: always from the bucket)."""
    update_workers: int = Field(default=4, ge=1, le=64)
    """Announced updates downloaded and checked at once (each holds one update's bytes,
    at most ``max_update_bytes``, in memory meanwhile)."""
    update_slack_bytes: int = Field(default=1 * MiB, ge=0)
    """An update may exceed the model's tensor bytes by at most this (its header)."""
    max_holdout_bytes: int = Field(default=2048 * MiB, ge=1)
    max_weights_bytes: int = Field(default=256 * MiB, ge=1)
    """Cap on uploaded starting weights (a model has at most 50 M parameters: 200 MB)."""
    eval_device: str = "cpu"
    """Device for holdout evaluation (``cpu``, ``cuda``, ``cuda:0``)."""
    eval_threads: int | None = Field(default=None, ge=1, le=1024)
    """CPU threads for holdout evaluation; ``None``: one for a small model and holdout,
    the machine's cores for a larger one (see ``numerics.eval_threads``)."""
    eval_batch_size: int = Field(default=1024, ge=1)
