"""Peer commands: registration (with the peer quota), announced specs, settings,
removal, broker credentials, and the bus events that change a peer's access."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from peertrain.common.events import RecordedEvent
from peertrain.common.events.peers import Announce, PeerEnrolled, PeerRemoved, peer_queue
from peertrain.common.security import Principal
from peertrain.registry.domain.errors import NotYourPeer, PeerNotFound, PeerQuotaExceeded
from peertrain.registry.domain.peer import (
    PeerRecord,
    decide_registered,
    decide_removed,
    decide_settings,
    decide_specs,
)
from peertrain.registry.domain.selection import PeerView

from .broker_admin import peer_username
from .queries import get

if TYPE_CHECKING:
    from peertrain.registry.application import RegistryApp

__all__ = [
    "BrokerGrant",
    "announce",
    "broker_credentials",
    "change_settings",
    "ensure_registered",
    "observe",
    "remove",
    "revoke_disabled_owners",
    "user_disabled",
]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class BrokerGrant:
    """Broker credentials handed to a peer (the password is new each time)."""

    username: str
    password: str
    queue: str


def _check_quota(reg: RegistryApp, record: PeerRecord) -> None:
    limit = reg.settings.max_peers_per_user
    owned = sum(
        1
        for r in reg.directory.records()
        if r.owner_id == record.owner_id
        and r.registered
        and not r.removed
        and r.peer_id != record.peer_id
    )
    if owned >= limit:
        raise PeerQuotaExceeded(
            f"this user already has {owned} registered peers (the limit is {limit})",
            detail={"quota": "peers", "limit": limit, "used": owned},
        )


async def ensure_registered(
    reg: RegistryApp, peer_id: str, *, causation: RecordedEvent | None = None
) -> PeerRecord:
    """Provision an enrolled peer on the broker and record ``peer.registered`` (once).

    Raises
    ------
    PeerQuotaExceeded
        If its owner already has ``max_peers_per_user`` registered peers.
    """
    record = await reg.streams.record(peer_id)
    if record.enrolled and not record.registered and not reg.revoked(record):
        _check_quota(reg, record)
        await reg.accounts.provision(peer_id)
        await reg.streams.execute(peer_id, decide_registered, causation=causation)
        log.info("peer registered", peer_id=peer_id, queue=peer_queue(peer_id))
        record = await reg.streams.record(peer_id)
    return record


async def announce(reg: RegistryApp, peer_id: str, message: Announce) -> None:
    """A verified announce: register the peer if needed, record new specs, and count
    it as a heartbeat."""
    record = await ensure_registered(reg, peer_id)
    if record.enrolled:
        await reg.streams.execute(peer_id, lambda r: decide_specs(r, message.specs), actor=peer_id)
    reg.presence.heartbeat(peer_id, message)


async def observe(reg: RegistryApp, event: RecordedEvent) -> None:
    """A ``peer.*`` event off the bus: fold it; provision newly enrolled peers, revoke
    removed ones.

    A stream this registry's log does not hold (the bus is shared) is read from the
    log, found empty, and ignored.
    """
    peer_id = event.stream.partition(":")[2]
    if peer_id in reg.directory:
        await reg.streams.observe(event)
    else:
        await reg.streams.record(peer_id)
    if isinstance(event.data, PeerEnrolled):
        try:
            await ensure_registered(reg, peer_id, causation=event)
        except PeerQuotaExceeded as exc:  # refused for good: not a reason to retry
            log.warning("peer not registered", peer_id=peer_id, reason=str(exc))
    elif isinstance(event.data, PeerRemoved):
        await reg.revoker.revoke(peer_id)


async def user_disabled(reg: RegistryApp, user_id: str) -> None:
    """``user.disabled``: every peer of the user loses broker access."""
    reg.security.disabled.add(user_id)  # also refuses their tokens here
    await revoke_disabled_owners(reg)


async def revoke_disabled_owners(reg: RegistryApp) -> int:
    """Revoke the broker access of every peer whose owner is disabled, once each.

    Run on ``user.disabled`` and every few seconds: the event may come (on this
    queue, or on the security queue that fills ``security.disabled``) before this
    registry has folded the peer's own events (queues are not ordered with each other),
    and a peer registered after its owner was disabled must lose its access too.
    """
    done = 0
    for record in list(reg.directory.records()):
        owner_disabled = record.owner_id in reg.security.disabled
        if not owner_disabled or record.peer_id in reg.revoked_owners:
            continue
        if await reg.revoker.revoke(record.peer_id):
            reg.revoked_owners.add(record.peer_id)
            done += 1
    return done


async def broker_credentials(reg: RegistryApp, who: Principal, peer_id: str) -> BrokerGrant:
    """New broker credentials for the calling peer (it must be ``peer_id``)."""
    if not who.is_peer or who.subject != peer_id:
        raise NotYourPeer("a peer may only get its own broker credentials")
    record = await reg.streams.record(peer_id)
    if not record.enrolled or reg.revoked(record):
        raise PeerNotFound("no such peer")
    if not record.registered:
        _check_quota(reg, record)
    await reg.accounts.provision(peer_id)
    if not record.registered:
        await reg.streams.execute(peer_id, decide_registered)
    password = await reg.accounts.new_password(peer_id)
    return BrokerGrant(peer_username(peer_id), password, peer_queue(peer_id))


async def change_settings(
    reg: RegistryApp,
    who: Principal,
    peer_id: str,
    *,
    shared: bool | None,
    disabled: bool | None,
) -> PeerView:
    """Share or disable a peer (its owner or an admin)."""
    view = get(reg, who, peer_id)
    if not (who.is_admin or view.record.owner_id == who.subject):
        raise NotYourPeer("only the peer's owner or an admin may change it")
    await reg.streams.execute(
        peer_id,
        lambda r: decide_settings(r, shared=shared, disabled=disabled),
        actor=who.subject,
    )
    return get(reg, who, peer_id)


async def remove(reg: RegistryApp, who: Principal, peer_id: str) -> None:
    """Remove a peer for good (its owner or an admin): ``peer.removed``, and its
    broker user deleted at once (retried in the background if RabbitMQ refuses)."""
    view = get(reg, who, peer_id)
    if not (who.is_admin or view.record.owner_id == who.subject):
        raise NotYourPeer("only the peer's owner or an admin may remove it")
    last_seen = reg.presence.last_seen(peer_id) or reg.clock.now()
    await reg.streams.execute(
        peer_id, lambda r: decide_removed(r, "removed", last_seen), actor=who.subject
    )
    reg.presence.forget(peer_id)
    await reg.revoker.revoke(peer_id)
