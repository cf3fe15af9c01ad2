"""Service settings, read from the environment by pydantic-settings.

Each service subclasses :class:`ServiceSettings` and sets its own env prefix, for
example ``PEERTRAIN_AUTH_`` (``PEERTRAIN_AUTH_MONGO_URL``, ``PEERTRAIN_AUTH_PORT``)::

    class AuthSettings(ServiceSettings):
        model_config = SettingsConfigDict(env_prefix="PEERTRAIN_AUTH_", extra="ignore")
        service_name: str = "auth"
        port: int = 8001

The defaults point at the local native stack started by ``make stack-up``.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from peertrain.common.blobs.config import BlobStoreConfig

__all__ = ["DEVELOPMENT_SECRETS", "ServiceSettings"]

DEVELOPMENT_SECRETS = frozenset({"", "admin", "guest", "minioadmin", "peertrain-dev-admin"})
"""Passwords of the local stack and the development compose file (and the engines' own
defaults): refused in production."""


class ServiceSettings(BaseSettings):
    """Settings every service shares.

    Notes
    -----
    The event log lives in ``mongo_db`` (shared by all services: it *is* the bus's
    source of truth); a service's own read models live in ``<mongo_db>_<service>``.
    """

    model_config = SettingsConfigDict(env_prefix="PEERTRAIN_", extra="ignore")

    service_name: str = "peertrain"
    environment: Literal["development", "test", "production"] = "development"
    host: str = "127.0.0.1"
    port: int = 8000
    api_prefix: str = ""
    """Where the service's public routes live, e.g. ``/api/auth`` (the gateway's path)."""
    queue_prefix: str = ""
    """Prefix of the service's queue names (``<prefix>.<purpose>``, :meth:`queue`); empty:
    the service's name. A test run gets its own (``PEERTRAIN_AUTH_QUEUE_PREFIX``)."""

    mongo_url: str = "mongodb://127.0.0.1:27017/"
    mongo_db: str = "peertrain"
    mongo_timeout_s: float = 2.0

    amqp_url: SecretStr = SecretStr("amqp://admin:admin@127.0.0.1:5672/")
    prefetch_count: int = Field(default=64, ge=1)
    delivery_limit: int = Field(default=5, ge=1)

    s3_endpoint_url: str = "http://127.0.0.1:9000"
    s3_access_key: str = "minioadmin"
    s3_secret_key: SecretStr = SecretStr("minioadmin")
    s3_region: str = "us-east-1"
    s3_bucket: str = "peertrain"

    relay_enabled: bool = True
    relay_batch_size: int = Field(default=2000, ge=1)
    relay_unroutable_grace_s: float | None = Field(default=300.0, gt=0)
    """How long an event no queue is bound for is retried before it is left in the log
    only (a declared queue keeps its bindings while its consumer is down, so this only
    drops events nobody in the deployment consumes). Unset: retried for ever."""

    request_body_timeout_s: float = Field(default=60.0, gt=0)
    request_body_min_rate: int = Field(default=64 * 1024, ge=1)
    """A request body must have arrived ``max(request_body_timeout_s, bytes received /
    request_body_min_rate)`` seconds after the request began, else 408 (a slow trickle
    is cut at the timeout; an upload may take longer while it averages the rate)."""

    log_level: str = "INFO"
    log_json: bool = True

    s3_presign_endpoint_url: str | None = None
    """Where peers reach S3, if not at ``s3_endpoint_url`` (compose: the host's address)."""

    def blob_store_config(self) -> BlobStoreConfig:
        """The blob store's configuration from the ``s3_*`` settings."""
        return BlobStoreConfig(
            endpoint_url=self.s3_endpoint_url,
            access_key=self.s3_access_key,
            secret_key=self.s3_secret_key,
            region=self.s3_region,
            bucket=self.s3_bucket,
            presign_endpoint_url=self.s3_presign_endpoint_url,
        )

    def startup_problems(self) -> list[str]:
        """Why this configuration must not run: in production, development secrets.

        The broker's password (in ``amqp_url``), MinIO's keys and a MongoDB without
        credentials are refused (anyone who can write the event log can mint tokens);
        services add their own checks. ``create_app`` refuses to build the service when
        the list is not empty; empty outside production.
        """
        if self.environment != "production":
            return []
        prefix = str(self.model_config.get("env_prefix", "PEERTRAIN_"))
        problems = []
        if (urlsplit(self.amqp_url.get_secret_value()).password or "") in DEVELOPMENT_SECRETS:
            problems.append(f"{prefix}AMQP_URL has no password or a development one")
        if self.s3_access_key in DEVELOPMENT_SECRETS:
            problems.append(f"{prefix}S3_ACCESS_KEY is empty or a development default")
        if self.s3_secret_key.get_secret_value() in DEVELOPMENT_SECRETS:
            problems.append(f"{prefix}S3_SECRET_KEY is empty or a development default")
        mongo = urlsplit(self.mongo_url)
        if "authMechanism=MONGODB-X509" not in mongo.query and (
            (mongo.password or "") in DEVELOPMENT_SECRETS
        ):
            problems.append(
                f"{prefix}MONGO_URL has no password or a development one"
                " (MongoDB must require authentication)"
            )
        return problems

    def queue(self, purpose: str) -> str:
        """The name of the service's queue for ``purpose`` (``auth.audit``)."""
        return f"{self.queue_prefix or self.service_name}.{purpose}"

    @property
    def own_db(self) -> str:
        """Name of this service's private database (its read models)."""
        return f"{self.mongo_db}_{self.service_name}"
