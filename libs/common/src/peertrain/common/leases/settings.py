"""Settings of a service that may run as several instances, and its instances' names."""

from __future__ import annotations

import os
import socket
import uuid

from pydantic import Field
from pydantic_settings import BaseSettings

__all__ = ["LeaseSettings", "new_instance_name"]


def new_instance_name() -> str:
    """A name for this process, unique among a service's instances (host, pid, random)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class LeaseSettings(BaseSettings):
    """Settings of a service that may run as several instances (mixed into its own)."""

    instance_name: str = Field(default_factory=new_instance_name)
    """This instance among the service's (its leases' holder; its own queue's name)."""
    lease_ttl_s: float = Field(default=10.0, ge=1.0, le=600.0)
    """A job whose instance stopped renewing moves to another after this long."""
    feed_expires_s: int = Field(default=300, ge=10, le=86_400)
    """An instance's own queue is deleted after this long without it (it is gone)."""
