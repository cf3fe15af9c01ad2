"""Peer events and peer telemetry: a peer machine's life from enrollment on.

Events (in the log, stream ``peer:<id>``):

``peer.enrolled`` (auth)
    A peer runtime redeemed an enrollment token.
``peer.registered`` (registry)
    The registry created the peer's broker user and its queue ``peer.<id>``.
``peer.specs_updated`` (registry)
    The peer announced device specs that differ from the ones on record.
``peer.went_online`` / ``peer.went_offline`` (registry)
    Liveness *transitions*; single heartbeats are never logged.
``peer.settings_changed`` (registry)
    Its owner (or an admin) shared or disabled it.
``peer.removed`` (registry)
    Its owner (or an admin) removed it for good: its broker user is deleted.

Telemetry (on ``peertrain.telemetry``, never logged as such): a peer publishes with
routing key ``peer.<id>.<kind>`` and its access token in the headers. The bodies of the
presence kinds (``announce``, ``heartbeat``, ``leaving``) are the models below.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from pydantic import ConfigDict, Field

from peertrain.common.text import StoreText

from .catalogue import event_type
from .envelope import EventData

__all__ = [
    "ANNOUNCE",
    "HEARTBEAT",
    "LEAVING",
    "PEER_ENROLLED",
    "PEER_EVENT_TYPES",
    "PEER_PROTOCOL",
    "PEER_REGISTERED",
    "PEER_REMOVED",
    "PEER_SETTINGS_CHANGED",
    "PEER_SPECS_UPDATED",
    "PEER_WENT_OFFLINE",
    "PEER_WENT_ONLINE",
    "Announce",
    "Device",
    "DeviceSpecs",
    "GpuSpecs",
    "Heartbeat",
    "Leaving",
    "OfflineReason",
    "PeerEnrolled",
    "PeerRegistered",
    "PeerRemoved",
    "PeerSettingsChanged",
    "PeerSpecsUpdated",
    "PeerWentOffline",
    "PeerWentOnline",
    "parse_telemetry_key",
    "peer_binding",
    "peer_queue",
    "peer_stream",
    "telemetry_key",
]

PEER_ENROLLED: Final = "peer.enrolled"
PEER_REGISTERED: Final = "peer.registered"
PEER_SPECS_UPDATED: Final = "peer.specs_updated"
PEER_WENT_ONLINE: Final = "peer.went_online"
PEER_WENT_OFFLINE: Final = "peer.went_offline"
PEER_SETTINGS_CHANGED: Final = "peer.settings_changed"
PEER_REMOVED: Final = "peer.removed"

PEER_EVENT_TYPES: Final[tuple[str, ...]] = (
    PEER_ENROLLED,
    PEER_REGISTERED,
    PEER_SPECS_UPDATED,
    PEER_WENT_ONLINE,
    PEER_WENT_OFFLINE,
    PEER_SETTINGS_CHANGED,
    PEER_REMOVED,
)
"""Every event type of the ``peer:<id>`` streams (what a peer read model folds)."""

HEARTBEAT: Final = "heartbeat"
ANNOUNCE: Final = "announce"
LEAVING: Final = "leaving"

Device = Literal["cpu", "cuda", "mps"]
OfflineReason = Literal["missed_heartbeats", "left"]


def peer_stream(peer_id: str) -> str:
    """The stream of one peer's events, ``peer:<id>``."""
    return f"peer:{peer_id}"


def peer_queue(peer_id: str) -> str:
    """The peer's own queue (its "queue ID"), ``peer.<id>``."""
    return f"peer.{peer_id}"


def peer_binding(peer_id: str) -> str:
    """How ``peer.<id>`` is bound to ``peertrain.peers``: ``peer.<id>.#``."""
    return f"peer.{peer_id}.#"


def telemetry_key(peer_id: str, kind: str) -> str:
    """Routing key of a peer's telemetry message, ``peer.<id>.<kind>``."""
    return f"peer.{peer_id}.{kind}"


def parse_telemetry_key(routing_key: str) -> tuple[str, str] | None:
    """``peer.<id>.<kind>`` -> ``(id, kind)``; ``None`` if the key has another shape."""
    prefix, _, rest = routing_key.partition(".")
    peer_id, _, kind = rest.rpartition(".")
    if prefix != "peer" or not peer_id or not kind or "." in peer_id:
        return None
    return peer_id, kind


# -- device specs ------------------------------------------------------------------------
# What a peer reports is checked at decode: no NUL anywhere (StoreText), numbers finite.


class GpuSpecs(StoreText):
    """One accelerator as torch reports it."""

    model_config = ConfigDict(frozen=True, extra="ignore")  # open to additions: see DeviceSpecs

    name: str = Field(max_length=200)
    memory_gb: float = Field(ge=0, le=1e6, allow_inf_nan=False)


PEER_PROTOCOL: Final = 2
"""The version of the messages a peer runtime reads (its tasks): a peer announces the
one it speaks with its specs, and only peers that speak this one are put in jobs.

Raise it with any change to those messages that a runtime built before would refuse
(it drops a task it cannot read, and its round waits out the deadline), and say in the
release notes which change it was. 1: runtimes that did not announce one; 2: the task's
feature spec without its columns' encodings (``FeatureSpec.for_peers``)."""


class DeviceSpecs(StoreText):
    """What a peer machine can do, as its runtime detected it.

    ``device`` is what training would run on: ``cuda`` when torch sees a CUDA GPU,
    ``mps`` on Apple silicon, else ``cpu`` (also when torch is not installed).
    """

    # Fields this version does not know are dropped, not refused: a runtime newer than the
    # registry (one that announces a field added since) still comes online.
    model_config = ConfigDict(frozen=True, extra="ignore")

    os: str = Field(max_length=200)
    python_version: str = Field(max_length=50)
    cpu_model: str = Field(max_length=200)
    cpu_cores: int = Field(ge=0, le=1_000_000)
    """Physical cores (logical ones when the physical count is unknown)."""
    cpu_threads: int = Field(ge=0, le=1_000_000)
    ram_gb: float = Field(ge=0, le=1e9, allow_inf_nan=False)
    disk_free_gb: float = Field(ge=0, le=1e12, allow_inf_nan=False)
    device: Device = "cpu"
    gpus: tuple[GpuSpecs, ...] = Field(default=(), max_length=64)
    cuda_version: str | None = Field(default=None, max_length=50)
    torch_version: str | None = Field(default=None, max_length=50)
    peertrain_version: str = Field(max_length=50)
    protocol: int = Field(default=1, ge=1, le=1_000_000)
    """The messages the runtime reads (:data:`PEER_PROTOCOL`); 1 when not announced."""

    @property
    def gpu_memory_gb(self) -> float:
        """The largest GPU's memory (0 without a GPU)."""
        return max((g.memory_gb for g in self.gpus), default=0.0)

    @property
    def memory_gb(self) -> float:
        """Memory of the training device: the largest GPU's on ``cuda``, else the RAM."""
        return self.gpu_memory_gb if self.device == "cuda" and self.gpus else self.ram_gb


# -- events ------------------------------------------------------------------------------


@event_type(PEER_ENROLLED)
class PeerEnrolled(EventData):
    """A peer runtime redeemed an enrollment token: it exists and belongs to ``owner_id``."""

    peer_id: str
    owner_id: str
    name: str = Field(min_length=1, max_length=64)


@event_type(PEER_REGISTERED)
class PeerRegistered(EventData):
    """The registry provisioned the peer: its broker user and its queue exist.

    ``queue`` is the queue ID other services address the peer by (bound to
    ``peertrain.peers`` with ``peer.<id>.#``).
    """

    peer_id: str
    owner_id: str
    name: str = Field(min_length=1, max_length=64)
    queue: str


@event_type(PEER_SPECS_UPDATED)
class PeerSpecsUpdated(EventData):
    """The peer announced device specs that differ from those on record (or the first)."""

    peer_id: str
    specs: DeviceSpecs


@event_type(PEER_WENT_ONLINE)
class PeerWentOnline(EventData):
    """Heartbeats arrive again (or for the first time); ``interval_s`` is their period."""

    peer_id: str
    interval_s: float = Field(gt=0)


@event_type(PEER_WENT_OFFLINE)
class PeerWentOffline(EventData):
    """The peer missed its heartbeats, or said it was leaving."""

    peer_id: str
    reason: OfflineReason
    last_seen: datetime


@event_type(PEER_SETTINGS_CHANGED)
class PeerSettingsChanged(EventData):
    """The peer's settings, as they are now: ``shared`` with every user, ``disabled``."""

    peer_id: str
    shared: bool
    disabled: bool


@event_type(PEER_REMOVED)
class PeerRemoved(EventData):
    """The peer is gone for good (its owner or an admin removed it): never selected,
    its broker user deleted, its telemetry refused."""

    peer_id: str
    reason: str = Field(default="removed", max_length=200)


# -- telemetry bodies (not events) ---------------------------------------------------------


class _Telemetry(StoreText):
    model_config = ConfigDict(frozen=True, extra="ignore")

    session: str = Field(min_length=1, max_length=64)
    """Random per run of the runtime: tells a new run from a late message of an old one."""
    seq: int = Field(ge=0, le=2**63 - 1)
    """Increases with every message of a session."""
    sent_at: float = Field(allow_inf_nan=False)
    """The peer's clock (seconds since the epoch): for lag metrics only, never trusted."""


class Heartbeat(_Telemetry):
    """``peer.<id>.heartbeat``: I am alive; expect the next one within ``interval_s``."""

    interval_s: float = Field(gt=0, le=3600, allow_inf_nan=False)


class Announce(Heartbeat):
    """``peer.<id>.announce``: a run started (or reconnected); here is what I can do."""

    specs: DeviceSpecs


class Leaving(_Telemetry):
    """``peer.<id>.leaving``: the runtime is stopping (SIGTERM): I am offline now."""

    reason: str = Field(default="shutdown", max_length=200)
