"""What the runtime knows about itself: its identity and its broker credentials."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from .files import IDENTITY_FILE, ConfigError, read_model

__all__ = ["BrokerAccess", "Identity", "RuntimeStatus", "load_identity"]


class Identity(BaseModel):
    """Who this peer is (from enrollment); ``peer_secret`` logs it in."""

    model_config = ConfigDict(extra="ignore")

    api: str
    peer_id: str
    peer_secret: str
    owner_id: str
    name: str
    enrolled_at: datetime


class BrokerAccess(BaseModel):
    """This peer's own RabbitMQ user (from the registry)."""

    model_config = ConfigDict(extra="ignore")

    username: str
    password: str
    url: str
    queue: str
    telemetry_exchange: str
    routing_key_prefix: str

    def amqp_url(self) -> str:
        """The URL with the credentials in it."""
        from urllib.parse import quote, urlsplit, urlunsplit

        parts = urlsplit(self.url)
        netloc = f"{quote(self.username, safe='')}:{quote(self.password, safe='')}@{parts.netloc}"
        return urlunsplit((parts.scheme, netloc, parts.path or "/", "", ""))


class RuntimeStatus(BaseModel):
    """What a running runtime reports about itself (``status.json``)."""

    pid: int
    session: str
    started_at: datetime
    state: str
    """``starting``, ``connected``, ``reconnecting`` or ``stopped``."""
    broker: str | None = None
    queue: str | None = None
    last_heartbeat_at: datetime | None = None
    heartbeats_sent: int = 0
    reconnects: int = 0
    tasks_received: int = 0
    last_error: str | None = None
    updated_at: datetime


def load_identity(config_dir: Path) -> Identity:
    """The enrolled identity.

    Raises
    ------
    ConfigError
        If the peer is not enrolled (or the file is unsafe or broken).
    """
    identity = read_model(config_dir, IDENTITY_FILE, Identity)
    if identity is None:
        raise ConfigError(
            f"not enrolled: no {config_dir / IDENTITY_FILE} (run: peertrain-peer enroll)"
        )
    return identity
