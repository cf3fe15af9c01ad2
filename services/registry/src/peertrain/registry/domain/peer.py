"""The peer aggregate: a fold of the ``peer:<id>`` stream, and the decisions on it.

:class:`PeerRecord` is both the aggregate the registry decides with and one row of its
read model. ``apply`` folds one recorded event; the ``decide_*`` functions look at a
record and answer the events (payloads) to append, empty when nothing changes, which
makes every command idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from peertrain.common.events import EventData, RawData, RecordedEvent
from peertrain.common.events.peers import (
    DeviceSpecs,
    PeerEnrolled,
    PeerRegistered,
    PeerRemoved,
    PeerSettingsChanged,
    PeerSpecsUpdated,
    PeerWentOffline,
    PeerWentOnline,
    peer_queue,
)

__all__ = [
    "PeerRecord",
    "apply",
    "decide_offline",
    "decide_online",
    "decide_registered",
    "decide_removed",
    "decide_settings",
    "decide_specs",
    "specs_changed",
]


@dataclass(frozen=True, slots=True)
class PeerRecord:
    """What the log says about one peer.

    Attributes
    ----------
    version
        ``seq`` of the last event folded (0: nothing known).
    position
        Global log position of that event.
    online
        Whether the last liveness transition was ``went_online``.
    """

    peer_id: str
    owner_id: str = ""
    name: str = ""
    enrolled: bool = False
    registered: bool = False
    queue: str | None = None
    specs: DeviceSpecs | None = None
    shared: bool = False
    disabled: bool = False
    online: bool = False
    removed: bool = False
    interval_s: float | None = None
    last_seen: datetime | None = None
    offline_reason: str | None = None
    enrolled_at: datetime | None = None
    updated_at: datetime | None = None
    version: int = 0
    position: int = 0


def _ms(at: datetime) -> datetime:
    """Times at BSON's precision (milliseconds): a record folded from events in memory
    equals the same record folded from the log."""
    return at.replace(microsecond=at.microsecond // 1000 * 1000)


def apply(record: PeerRecord, event: RecordedEvent) -> PeerRecord:
    """Fold ``event`` into ``record`` (the caller checks that ``seq`` follows)."""
    data: EventData | RawData = event.data
    at = _ms(event.occurred_at)
    new = replace(record, version=event.seq, position=event.position, updated_at=at)
    if isinstance(data, PeerEnrolled):
        return replace(new, owner_id=data.owner_id, name=data.name, enrolled=True, enrolled_at=at)
    if isinstance(data, PeerRegistered):
        return replace(
            new, owner_id=data.owner_id, name=data.name, registered=True, queue=data.queue
        )
    if isinstance(data, PeerSpecsUpdated):
        return replace(new, specs=data.specs)
    if isinstance(data, PeerWentOnline):
        return replace(
            new, online=True, interval_s=data.interval_s, last_seen=at, offline_reason=None
        )
    if isinstance(data, PeerWentOffline):
        return replace(new, online=False, last_seen=_ms(data.last_seen), offline_reason=data.reason)
    if isinstance(data, PeerSettingsChanged):
        return replace(new, shared=data.shared, disabled=data.disabled)
    if isinstance(data, PeerRemoved):
        return replace(new, removed=True, online=False)
    return new  # an event type this version does not know: keep the position moving


def decide_registered(record: PeerRecord) -> list[EventData]:
    """``peer.registered`` once the broker user and queue exist (once per peer)."""
    if record.registered or not record.enrolled or record.removed:
        return []
    return [
        PeerRegistered(
            peer_id=record.peer_id,
            owner_id=record.owner_id,
            name=record.name,
            queue=peer_queue(record.peer_id),
        )
    ]


DISK_CHANGE_GB = 1.0
DISK_CHANGE_FRACTION = 0.1


def specs_changed(old: DeviceSpecs | None, new: DeviceSpecs) -> bool:
    """Whether ``new`` is worth a ``peer.specs_updated`` after ``old``.

    Free disk moves all the time: it counts only when it moved by more than 1 GB and
    10 %; every other field counts on any change.
    """
    if old is None:
        return True
    if old.model_dump(exclude={"disk_free_gb"}) != new.model_dump(exclude={"disk_free_gb"}):
        return True
    moved = abs(old.disk_free_gb - new.disk_free_gb)
    return moved > DISK_CHANGE_GB and moved > DISK_CHANGE_FRACTION * max(old.disk_free_gb, 1.0)


def decide_specs(record: PeerRecord, specs: DeviceSpecs) -> list[EventData]:
    """``peer.specs_updated`` when ``specs`` differ (noticeably) from those on record."""
    if not specs_changed(record.specs, specs):
        return []
    return [PeerSpecsUpdated(peer_id=record.peer_id, specs=specs)]


def decide_online(record: PeerRecord, interval_s: float) -> list[EventData]:
    """``peer.went_online`` unless the log already says online."""
    if record.online:
        return []
    return [PeerWentOnline(peer_id=record.peer_id, interval_s=interval_s)]


def decide_offline(record: PeerRecord, reason: str, last_seen: datetime) -> list[EventData]:
    """``peer.went_offline`` unless the log already says offline."""
    if not record.online:
        return []
    return [
        PeerWentOffline(
            peer_id=record.peer_id,
            reason="left" if reason == "left" else "missed_heartbeats",
            last_seen=last_seen,
        )
    ]


def decide_removed(record: PeerRecord, reason: str, last_seen: datetime) -> list[EventData]:
    """``peer.removed`` once; an online peer goes offline (``left``) first, so readers
    that only follow liveness stop counting it too."""
    if record.removed or not record.enrolled:
        return []
    out: list[EventData] = []
    if record.online:
        out.append(PeerWentOffline(peer_id=record.peer_id, reason="left", last_seen=last_seen))
    out.append(PeerRemoved(peer_id=record.peer_id, reason=reason))
    return out


def decide_settings(
    record: PeerRecord, *, shared: bool | None, disabled: bool | None
) -> list[EventData]:
    """``peer.settings_changed`` with the full new settings, if anything changes."""
    new_shared = record.shared if shared is None else shared
    new_disabled = record.disabled if disabled is None else disabled
    if (new_shared, new_disabled) == (record.shared, record.disabled):
        return []
    return [PeerSettingsChanged(peer_id=record.peer_id, shared=new_shared, disabled=new_disabled)]
