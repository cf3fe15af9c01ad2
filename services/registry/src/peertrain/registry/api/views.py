"""What the registry's routes answer (HTTP response bodies)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from peertrain.common.events.peers import DeviceSpecs

from ..domain.liveness import Status
from ..domain.selection import PeerView

__all__ = [
    "BrokerCredentials",
    "PeerPublic",
    "ReplayResult",
    "SelectedPeer",
]


class PeerPublic(BaseModel):
    """A peer as callers see it."""

    peer_id: str
    name: str
    owner_id: str
    status: Status
    queue: str | None = Field(description="The peer's queue ID (null until registered)")
    specs: DeviceSpecs | None
    last_seen: datetime | None
    heartbeat_interval_s: float | None
    shared: bool
    disabled: bool
    enrolled_at: datetime | None
    updated_at: datetime | None

    @classmethod
    def of(cls, view: PeerView) -> PeerPublic:
        """From a view of the read model."""
        r = view.record
        return cls(
            peer_id=r.peer_id,
            name=r.name,
            owner_id=r.owner_id,
            status=view.status,
            queue=r.queue,
            specs=r.specs,
            last_seen=view.last_seen,
            heartbeat_interval_s=view.interval_s,
            shared=r.shared,
            disabled=r.disabled,
            enrolled_at=r.enrolled_at,
            updated_at=r.updated_at,
        )


class SelectedPeer(BaseModel):
    """One selected peer: where to send its tasks, and what it has."""

    peer_id: str
    queue: str
    specs: DeviceSpecs | None
    last_seen: datetime | None

    @classmethod
    def of(cls, view: PeerView) -> SelectedPeer:
        """From a view of the read model (usable peers always have a queue)."""
        return cls(
            peer_id=view.record.peer_id,
            queue=view.record.queue or "",
            specs=view.record.specs,
            last_seen=view.last_seen,
        )


class BrokerCredentials(BaseModel):
    """A peer's own RabbitMQ credentials (a new password on every request)."""

    username: str
    password: str
    url: str = Field(description="amqp://host:port/vhost, without credentials")
    queue: str = Field(description="The only queue this user may consume")
    telemetry_exchange: str = Field(description="The only exchange this user may publish to")
    routing_key_prefix: str = Field(description="Telemetry routing keys must start with it")


class ReplayResult(BaseModel):
    """What ``POST /admin/replay`` did."""

    peers: int
    events: int
    position: int
    took_s: float
