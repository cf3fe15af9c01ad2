"""Which peers a caller may see, which match a query, and which a selection picks."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from peertrain.common.events.peers import Device
from peertrain.common.peers import may_use, own_first, pick
from peertrain.common.security import Principal

from .liveness import Status
from .peer import PeerRecord

__all__ = ["PeerFilters", "PeerView", "Prefer", "choose", "matches", "visible_to"]

Prefer = Literal["memory", "gpu", "random"]


@dataclass(frozen=True, slots=True)
class PeerView:
    """A peer as the API shows it: what the log says plus its liveness now (status, last
    heard from, heartbeat interval: the live figures, which the log's catch up with)."""

    record: PeerRecord
    status: Status
    last_seen: datetime | None
    interval_s: float | None = None

    @property
    def usable(self) -> bool:
        """Active, registered (it has a queue), not disabled by its owner, not removed."""
        r = self.record
        return self.status is Status.ACTIVE and r.registered and not r.disabled and not r.removed


@dataclass(frozen=True, slots=True)
class PeerFilters:
    """Query filters; ``None`` means "any".

    ``min_memory_gb`` is the training device's memory: the largest GPU's on a ``cuda``
    peer, the RAM otherwise (see :attr:`DeviceSpecs.memory_gb`).
    """

    status: Status | None = None
    device: Device | None = None
    min_memory_gb: float | None = None
    owner_id: str | None = None


def visible_to(record: PeerRecord, who: Principal) -> bool:
    """A user sees the peers they may use (:func:`peertrain.common.peers.may_use`); a
    peer sees itself. A removed peer is seen by nobody."""
    if record.removed:
        return False
    if who.is_peer:
        return who.subject == record.peer_id
    return may_use(who, owner_id=record.owner_id, shared=record.shared)


def matches(view: PeerView, filters: PeerFilters) -> bool:
    """Whether ``view`` passes every filter that is set."""
    record = view.record
    if filters.status is not None and view.status is not filters.status:
        return False
    if filters.owner_id is not None and record.owner_id != filters.owner_id:
        return False
    specs = record.specs
    if filters.device is not None and (specs is None or specs.device != filters.device):
        return False
    return filters.min_memory_gb is None or (
        specs is not None and specs.memory_gb >= filters.min_memory_gb
    )


def _memory_key(view: PeerView) -> tuple[float, str]:
    specs = view.record.specs
    return (-(specs.memory_gb if specs else 0.0), view.record.peer_id)


def _gpu_key(view: PeerView) -> tuple[int, float, float, str]:
    specs = view.record.specs
    if specs is None:
        return (1, 0.0, 0.0, view.record.peer_id)
    has_gpu = specs.device != "cpu"
    return (0 if has_gpu else 1, -specs.gpu_memory_gb, -specs.ram_gb, view.record.peer_id)


def _owner(view: PeerView) -> str | None:
    return view.record.owner_id


def choose(
    candidates: Iterable[PeerView],
    count: int,
    prefer: Prefer,
    *,
    rng: random.Random | None = None,
    caller_id: str | None = None,
) -> list[PeerView]:
    """Pick ``count`` usable peers, best first by ``prefer``.

    ``memory``: most training-device memory first; ``gpu``: GPU peers first (largest GPU
    memory, then RAM); ``random``: a uniform sample. Ties break by peer id, so the
    answer is stable. Memory is what peers claim (bounded, see :mod:`.specs`): the
    ranked preferences put ``caller_id``'s own peers before other users' shared ones
    (:func:`peertrain.common.peers.own_first`).

    Raises
    ------
    NotEnoughPeers
        If fewer than ``count`` candidates are usable.
    """
    usable = [v for v in candidates if v.usable]
    if prefer == "random":
        return pick(usable, count, rank=None, rng=rng)
    key = _gpu_key if prefer == "gpu" else _memory_key
    return pick(usable, count, rank=own_first(caller_id, _owner, key))
