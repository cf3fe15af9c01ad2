"""The orchestrator's own projections of other services' events: peers, datasets and
uploaded starting weights.

Folded from ``peer:<id>``, ``dataset:<id>`` and ``weights:<id>`` streams; each entity
remembers the last ``seq`` it applied, so replaying the log and consuming the queue may
overlap freely.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import (
    DatasetDeleted,
    DatasetRejected,
    DatasetUploaded,
    DatasetValidated,
    FeatureSpec,
)
from peertrain.common.events.peers import (
    PEER_PROTOCOL,
    PeerEnrolled,
    PeerRegistered,
    PeerSettingsChanged,
    PeerSpecsUpdated,
    PeerWentOffline,
    PeerWentOnline,
)
from peertrain.common.events.weights import WeightsUploaded
from peertrain.common.peers import may_use
from peertrain.common.security import Principal

__all__ = ["DatasetInfo", "Directory", "PeerInfo"]


@dataclass
class PeerInfo:
    """What the orchestrator knows of one peer."""

    peer_id: str
    owner_id: str | None = None
    name: str | None = None
    registered: bool = False
    online: bool = False
    shared: bool = False
    disabled: bool = False
    device: str | None = None
    memory_gb: float = 0.0
    cores: int | None = None
    protocol: int | None = None
    """The messages its runtime reads (``DeviceSpecs.protocol``); ``None``: no specs on
    record yet."""
    seq: int = 0
    rows_per_s: float | None = None
    """Training speed the platform measured (its accepted tasks' rows per second of
    wall time, from assignment to accepted update), smoothed; ``None`` until one."""

    def observe(self, rows: int, seconds: float) -> None:
        """Fold one accepted task into the measured speed."""
        rate = rows / max(seconds, 0.001)
        previous = self.rows_per_s
        self.rows_per_s = rate if previous is None else 0.7 * previous + 0.3 * rate

    @property
    def usable(self) -> bool:
        """Online, registered (it has a queue), not disabled, and able to read this
        platform's tasks."""
        return self.online and self.registered and not self.disabled and not self.outdated

    @property
    def outdated(self) -> bool:
        """Its runtime announced an older task protocol than this platform's
        (:data:`~peertrain.common.events.peers.PEER_PROTOCOL`): it would drop its tasks."""
        return self.protocol is not None and self.protocol < PEER_PROTOCOL

    def usable_by(self, who: Principal) -> bool:
        """Whether ``who`` may put this peer in a job (:func:`peertrain.common.peers.may_use`)."""
        return may_use(who, owner_id=self.owner_id, shared=self.shared)


@dataclass
class DatasetInfo:
    """What the orchestrator knows of one dataset."""

    dataset_id: str
    owner_id: str | None = None
    name: str | None = None
    state: str = "validating"
    feature_spec: FeatureSpec | None = None
    train_rows: int = 0
    classes: tuple[str, ...] = ()
    seq: int = 0


@dataclass
class Directory:
    """Peers and datasets, by id."""

    peers: dict[str, PeerInfo] = field(default_factory=dict)
    datasets: dict[str, DatasetInfo] = field(default_factory=dict)
    weights: dict[str, WeightsUploaded] = field(default_factory=dict)
    """Uploaded starting weights, by id (one event each)."""

    def apply(self, event: RecordedEvent) -> bool:
        """Fold one peer or dataset event; ``False`` if it was not new."""
        data = event.data
        if event.stream.startswith("peer:"):
            peer_id = event.stream.partition(":")[2]
            peer = self.peers.setdefault(peer_id, PeerInfo(peer_id))
            if event.seq <= peer.seq:
                return False
            peer.seq = event.seq
            _apply_peer(peer, data)
            return True
        if event.stream.startswith("dataset:"):
            dataset_id = event.stream.partition(":")[2]
            ds = self.datasets.setdefault(dataset_id, DatasetInfo(dataset_id))
            if event.seq <= ds.seq:
                return False
            ds.seq = event.seq
            _apply_dataset(ds, data)
            return True
        if isinstance(data, WeightsUploaded):
            return self.weights.setdefault(data.weights_id, data) is data
        return False

    def online_peers(self) -> set[str]:
        """Ids of the peers usable right now."""
        return {p.peer_id for p in self.peers.values() if p.usable}


def _apply_peer(peer: PeerInfo, data: object) -> None:
    if isinstance(data, PeerEnrolled | PeerRegistered):
        peer.owner_id = data.owner_id
        peer.name = data.name
        if isinstance(data, PeerRegistered):
            peer.registered = True
    elif isinstance(data, PeerWentOnline):
        peer.online = True
    elif isinstance(data, PeerWentOffline):
        peer.online = False
    elif isinstance(data, PeerSettingsChanged):
        peer.shared = data.shared
        peer.disabled = data.disabled
    elif isinstance(data, PeerSpecsUpdated):
        peer.device = data.specs.device
        peer.memory_gb = data.specs.memory_gb
        peer.cores = data.specs.cpu_cores
        peer.protocol = data.specs.protocol


def _apply_dataset(ds: DatasetInfo, data: object) -> None:
    if isinstance(data, DatasetUploaded):
        ds.owner_id = data.owner_id
        ds.name = data.name
    elif isinstance(data, DatasetValidated):
        ds.state = "validated"
        ds.feature_spec = data.feature_spec
        ds.train_rows = data.train_rows
        ds.classes = data.classes
    elif isinstance(data, DatasetRejected):
        ds.state = "rejected"
    elif isinstance(data, DatasetDeleted):
        ds.state = "deleted"
