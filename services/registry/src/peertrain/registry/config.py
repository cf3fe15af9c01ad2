"""The registry's settings (``PEERTRAIN_REGISTRY_*``)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from peertrain.common.settings import DEVELOPMENT_SECRETS, ServiceSettings

from .domain.specs import SpecBounds

__all__ = ["RegistrySettings"]


class RegistrySettings(ServiceSettings):
    """Everything the registry reads from its environment.

    Token issuer and audience come from ``PEERTRAIN_JWT_*`` like everywhere else.
    """

    model_config = SettingsConfigDict(env_prefix="PEERTRAIN_REGISTRY_", extra="ignore")

    service_name: str = "registry"
    port: int = 8002
    api_prefix: str = "/api/registry"

    queue_namespace: str = "registry"
    """Prefix of the registry's own queues (``<ns>.peers``, ``<ns>.heartbeats``, ...);
    tests give each run its own."""

    # -- RabbitMQ administration (infrastructure, not a PeerTrain service) --------------
    rabbitmq_management_url: str = "http://127.0.0.1:15672"
    rabbitmq_admin_user: str = "admin"
    rabbitmq_admin_password: SecretStr = SecretStr("admin")
    rabbitmq_vhost: str = "/"
    peer_amqp_url: str = "amqp://127.0.0.1:5672/"
    """Where peers reach RabbitMQ (no credentials in it: each peer gets its own)."""
    peer_password_bytes: int = Field(default=32, ge=16, le=128)

    # -- liveness -------------------------------------------------------------------------
    default_interval_s: float = Field(default=5.0, gt=0)
    min_interval_s: float = Field(default=0.5, gt=0)
    max_interval_s: float = Field(default=300.0, gt=0)
    stale_after_intervals: float = Field(default=2.0, gt=0)
    offline_after_intervals: float = Field(default=3.0, gt=0)
    sweep_interval_s: float = Field(default=0.5, gt=0)
    """How often silence is checked (each sweep visits every tracked peer)."""
    resume_grace_intervals: float = Field(default=5.0, ge=0)
    """After the heartbeat consumer was away (broker restart, lost connection), nobody
    goes offline for silence for this many of its heartbeat intervals: the peers lost
    the broker too and are reconnecting."""
    resume_grace_s: float = Field(default=20.0, ge=0)
    """... and for at least this many seconds: a peer's reconnect backoff is at most
    ~2 s in the first minute of an outage, at most 15 s (its default
    ``PEERTRAIN_PEER_RECONNECT_MAX_S``) later on."""
    flood_refusals_per_s: int = Field(default=50, ge=1)
    """Refused heartbeats on one peer's key in one second that make a flood: while one
    lasts, that peer's own heartbeats may wait behind it, so that peer (and no other) is
    not judged for silence."""
    flood_quiet_s: float = Field(default=2.0, gt=0)
    """Seconds after a flood's last refusal before its peer is judged again."""

    # -- telemetry consumption ------------------------------------------------------------
    heartbeat_prefetch: int = Field(default=2000, ge=1)
    heartbeat_ack_every: int = Field(default=250, ge=1)
    heartbeat_ttl_s: float = Field(default=30.0, gt=0)
    """Heartbeats older than this are dropped by RabbitMQ (stale news after an outage)."""
    presence_prefetch: int = Field(default=32, ge=1)
    reconnect_max_s: float = Field(default=5.0, gt=0)
    token_cache_size: int = Field(default=200_000, ge=0)
    telemetry_rate_per_s: float = Field(default=5.0, gt=0)
    """Telemetry messages (heartbeat, announce, leaving) one verified peer may send per
    second; the excess is counted (``reason="rate_limited"``) and dropped."""
    telemetry_burst: float = Field(default=20.0, ge=1)
    unverified_rate_per_s: float = Field(default=2.0, gt=0)
    """Full verifications of tokens not seen before, per routing-key peer id and second:
    junk on one key beyond it is dropped without cryptography (``reason="unverified_rate"``),
    and never touches the budget of messages with a token already verified."""
    unverified_burst: float = Field(default=10.0, ge=1)
    unverified_total_per_s: float = Field(default=5000.0, gt=0)
    """Full verifications of unseen tokens per second over all keys (caps the CPU junk
    spread over many peers' keys can cost; a restart of the registry needs about one
    interval's worth of peers, since a verified token is remembered)."""
    unverified_total_burst: float = Field(default=10_000.0, ge=1)

    # -- abuse limits -----------------------------------------------------------------------
    max_peers_per_user: int = Field(default=50, ge=1)
    """Registered (not removed) peers one user may have; the next one is refused (403)."""
    spec_max_ram_gb: float = Field(default=8192.0, gt=0)
    spec_max_gpu_memory_gb: float = Field(default=1024.0, gt=0)
    spec_max_gpus: int = Field(default=64, ge=0)
    spec_max_cpu_cores: int = Field(default=1024, ge=1)
    spec_max_cpu_threads: int = Field(default=4096, ge=1)
    spec_max_disk_free_gb: float = Field(default=1_048_576.0, gt=0)
    disabled_sweep_s: float = Field(default=5.0, gt=0, le=3600)
    """How often peers of disabled owners are checked for broker access to revoke."""
    revoke_retry_max_s: float = Field(default=30.0, gt=0)
    """Longest pause between retries of a broker user deletion that failed."""

    # -- read model -----------------------------------------------------------------------
    flush_interval_s: float = Field(default=1.0, gt=0)
    """How often changed peers are written to the ``peers`` collection."""

    def spec_bounds(self) -> SpecBounds:
        """The bounds announced specs must respect."""
        return SpecBounds(
            max_ram_gb=self.spec_max_ram_gb,
            max_gpu_memory_gb=self.spec_max_gpu_memory_gb,
            max_gpus=self.spec_max_gpus,
            max_cpu_cores=self.spec_max_cpu_cores,
            max_cpu_threads=self.spec_max_cpu_threads,
            max_disk_free_gb=self.spec_max_disk_free_gb,
        )

    def queue(self, purpose: str) -> str:
        """The name of one of the registry's queues."""
        return f"{self.queue_namespace}.{purpose}"

    def startup_problems(self) -> list[str]:
        """Why this configuration must not run in production (the shared checks, and
        the broker admin password the registry creates peer users with)."""
        problems = super().startup_problems()
        if self.environment != "production":
            return problems
        if self.rabbitmq_admin_password.get_secret_value() in DEVELOPMENT_SECRETS:
            problems.append("PEERTRAIN_REGISTRY_RABBITMQ_ADMIN_PASSWORD is empty or a default")
        return problems
