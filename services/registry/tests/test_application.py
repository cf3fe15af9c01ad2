"""The registry application on in-memory ports with a manual clock: events through its
subscription table, heartbeats through its telemetry methods, timers by ``tick()``
(no stack)."""

from __future__ import annotations

from typing import Any

from peertrain.common.app import deliver
from peertrain.common.events import NewEvent
from peertrain.common.events.peers import (
    PEER_REGISTERED,
    PEER_WENT_OFFLINE,
    PEER_WENT_ONLINE,
    Heartbeat,
    PeerEnrolled,
    telemetry_key,
)
from peertrain.common.events.users import UserDisabled
from peertrain.common.security import TOKEN_HEADER
from peertrain.registry.application import REGISTRY_SUBSCRIPTIONS
from peertrain.registry.domain.liveness import Status
from peertrain.registry.metrics import REJECTED_HEARTBEATS
from peertrain.registry.usecases.telemetry import TelemetryMessage

from .memory import Registry, registry
from .test_tokens import setup, signed

__all__ = ["setup"]  # the fixture, imported for use here

FAST = {
    "default_interval_s": 1.0,
    "stale_after_intervals": 2.0,
    "offline_after_intervals": 3.0,
    "resume_grace_s": 0.0,
}


async def enroll(reg: Registry, peer_id: str, owner: str = "u") -> None:
    """Auth enrolls the peer; the registry hears it off its peers queue."""
    data = PeerEnrolled(peer_id=peer_id, owner_id=owner, name=f"box-{peer_id}")
    (event,) = await reg.log.append(
        f"peer:{peer_id}", [NewEvent.of(data, producer="auth")], expected_version=0
    )
    assert await deliver(REGISTRY_SUBSCRIPTIONS, reg.app, event) == 1


def heartbeat(
    reg: Registry, key: Any, peer_id: str, seq: int, *, sub: str = ""
) -> TelemetryMessage:
    body = Heartbeat(session="s", seq=seq, sent_at=reg.clock.time(), interval_s=1.0)
    token = signed(key, sub=sub or peer_id)
    return TelemetryMessage(
        telemetry_key(peer_id, "heartbeat"),
        {TOKEN_HEADER: f"Bearer {token}"},
        body.model_dump_json().encode(),
    )


async def types(reg: Registry, peer_id: str) -> list[str]:
    return [e.type for e in await reg.log.read_stream(f"peer:{peer_id}")]


async def test_heartbeats_bring_a_peer_online_and_silence_takes_it_offline_on_tick(
    setup: tuple[Any, Any],
) -> None:
    security, key = setup
    reg = registry(security, **FAST)
    await enroll(reg, "p1")
    assert reg.accounts.accounts == {"p1"}  # provisioned on the broker, and registered
    await reg.app.on_heartbeat(heartbeat(reg, key, "p1", 0))
    await reg.app.tick()
    assert await types(reg, "p1") == ["peer.enrolled", PEER_REGISTERED, PEER_WENT_ONLINE]
    for seq in range(1, 4):  # heartbeating every second: nothing to record
        reg.clock.advance(1.0)
        await reg.app.on_heartbeat(heartbeat(reg, key, "p1", seq))
        await reg.app.tick()
    assert reg.app.presence.status("p1") is Status.ACTIVE
    reg.clock.advance(2.5)
    await reg.app.tick()
    assert reg.app.presence.status("p1") is Status.STALE  # late, not gone
    assert (await types(reg, "p1"))[-1] == PEER_WENT_ONLINE
    reg.clock.advance(1.0)  # three intervals of silence
    await reg.app.tick()
    assert (await types(reg, "p1"))[-1] == PEER_WENT_OFFLINE
    record = reg.app.directory.get("p1")
    assert record is not None and not record.online  # the read model, at once


async def test_a_heartbeat_signed_by_another_peer_is_refused_and_counted(
    setup: tuple[Any, Any],
) -> None:
    security, key = setup
    reg = registry(security, **FAST)
    await enroll(reg, "p1")
    await enroll(reg, "p2")
    refused = REJECTED_HEARTBEATS.labels(reason="wrong_peer")
    before = refused._value.get()
    await reg.app.on_heartbeat(heartbeat(reg, key, "p1", 0, sub="p2"))  # p2's token, p1's key
    await reg.app.tick()
    assert refused._value.get() == before + 1
    assert PEER_WENT_ONLINE not in await types(reg, "p1")
    assert reg.app.presence.status("p1") is Status.OFFLINE


async def test_a_disabled_users_peers_lose_broker_access_even_those_enrolled_later(
    setup: tuple[Any, Any],
) -> None:
    security, _ = setup
    reg = registry(security, **FAST)
    for peer_id, owner in (("a1", "alice"), ("a2", "alice"), ("b1", "bob")):
        await enroll(reg, peer_id, owner)
    (disabled,) = await reg.log.append(
        "user:alice",
        [NewEvent.of(UserDisabled(user_id="alice"), producer="auth")],
        expected_version=0,
    )
    assert await deliver(REGISTRY_SUBSCRIPTIONS, reg.app, disabled) == 1
    assert sorted(reg.accounts.deprovisioned) == ["a1", "a2"]
    assert reg.accounts.accounts == {"b1"}
    await enroll(reg, "a3", "alice")  # its events came after the user's (other queue)
    assert "a3" not in reg.accounts.accounts  # never provisioned
    await reg.app.tick()
    assert sorted(reg.accounts.deprovisioned) == ["a1", "a2", "a3"]  # once each
    await reg.app.tick()
    assert sorted(reg.accounts.deprovisioned) == ["a1", "a2", "a3"]
