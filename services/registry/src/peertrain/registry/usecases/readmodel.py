"""Loading the read model at start-up, and rebuilding it from the log (replay)."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

import structlog

from peertrain.registry.directory import PeerDirectory, Rebuilt, catch_up, rebuild

if TYPE_CHECKING:
    from peertrain.registry.application import RegistryApp

__all__ = ["load", "replay"]

log = structlog.get_logger(__name__)


async def load(reg: RegistryApp) -> None:
    """Read model from the store, then the log beyond its checkpoint; seed liveness;
    revoke (again) every registered peer that must have no broker access."""
    records, checkpoint = await reg.store.load()
    reg.directory.replace_with(PeerDirectory(records, position=checkpoint))
    folded = await catch_up(reg.ports.log, reg.directory)
    seeded = reg.presence.seed()
    for record in reg.directory.records():  # idempotent: covers a crash mid-revocation
        if record.registered and reg.revoked(record):
            reg.revoker.later(record.peer_id)
    gc.freeze()  # what start-up loaded lives on: keep it out of the collector's scans
    log.info("read model loaded", peers=len(records), caught_up=folded, online=seeded)


async def replay(reg: RegistryApp) -> Rebuilt:
    """Drop the read model and rebuild it from the log (memory and store)."""
    async with reg.projector.lock:
        fresh, result = await rebuild(reg.ports.log, reg.store)
        reg.directory.replace_with(fresh)
        await catch_up(reg.ports.log, reg.directory)  # appended meanwhile
        await reg.projector.flush_locked()
    reg.presence.seed()
    return result
