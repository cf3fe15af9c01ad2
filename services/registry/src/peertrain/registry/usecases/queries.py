"""Peer queries, answered from memory: what a caller may see, and selection."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from peertrain.common.security import Principal
from peertrain.registry.domain.errors import PeerNotFound
from peertrain.registry.domain.liveness import Status
from peertrain.registry.domain.peer import PeerRecord
from peertrain.registry.domain.selection import (
    PeerFilters,
    PeerView,
    Prefer,
    choose,
    matches,
    visible_to,
)

if TYPE_CHECKING:
    from peertrain.registry.application import RegistryApp

__all__ = ["get", "list_peers", "select", "view", "visible"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def view(reg: RegistryApp, record: PeerRecord) -> PeerView:
    """The record with its liveness now."""
    presence = reg.presence
    last_seen = presence.last_seen(record.peer_id) or record.last_seen
    interval_s = presence.interval_s(record.peer_id) or record.interval_s
    return PeerView(record, presence.status(record.peer_id), last_seen, interval_s)


def visible(reg: RegistryApp, who: Principal) -> Iterator[PeerView]:
    """Every enrolled peer ``who`` may see."""
    for record in reg.directory.records():
        if record.enrolled and visible_to(record, who):
            yield view(reg, record)


def get(reg: RegistryApp, who: Principal, peer_id: str) -> PeerView:
    """One peer ``who`` may see (any other answers :class:`PeerNotFound`)."""
    record = reg.directory.get(peer_id)
    if record is None or not record.enrolled or not visible_to(record, who):
        raise PeerNotFound("no such peer")
    return view(reg, record)


def list_peers(reg: RegistryApp, who: Principal, filters: PeerFilters) -> list[PeerView]:
    """Peers ``who`` may see that match ``filters``, oldest enrollment first (the route
    answers a page of them)."""
    found = [v for v in visible(reg, who) if matches(v, filters)]
    found.sort(key=lambda v: (v.record.enrolled_at or _EPOCH, v.record.peer_id))
    return found


def select(
    reg: RegistryApp,
    who: Principal,
    count: int,
    filters: PeerFilters,
    prefer: Prefer,
    *,
    seed: int | None = None,
) -> list[PeerView]:
    """``count`` usable active peers matching ``filters``, best first by ``prefer``."""
    active = PeerFilters(
        status=Status.ACTIVE,
        device=filters.device,
        min_memory_gb=filters.min_memory_gb,
        owner_id=filters.owner_id,
    )
    candidates = [v for v in visible(reg, who) if matches(v, active)]
    rng = random.Random(seed) if seed is not None else None
    return choose(candidates, count, prefer, rng=rng, caller_id=who.subject)
