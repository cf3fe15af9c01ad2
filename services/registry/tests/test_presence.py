"""Presence's sweep with a fake clock: offline is judged only once the heartbeat
consumer has caught up with the moment judged (no stack)."""

from __future__ import annotations

from peertrain.common.clock import ManualClock
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events.peers import Heartbeat
from peertrain.registry.directory import PeerDirectory
from peertrain.registry.domain.liveness import LivenessTracker, TransitionKind
from peertrain.registry.usecases.presence import Presence
from peertrain.registry.usecases.streams import PeerStreams


def to(clock: ManualClock, t: float) -> None:
    """Move ``clock`` on to ``t`` seconds after its start."""
    clock.advance(t - clock.monotonic())


def presence(clock: ManualClock) -> Presence:
    directory = PeerDirectory()
    tracker = LivenessTracker(default_interval_s=1.0, stale_after=2, offline_after=3)
    streams = PeerStreams(MemoryEventLog(), directory, producer="registry")
    return Presence(tracker, streams, directory, clock=clock)


def beat(clock: ManualClock, seq: int) -> Heartbeat:
    return Heartbeat(session="s", seq=seq, sent_at=clock.time(), interval_s=1.0)


async def test_a_heartbeat_waiting_in_the_queue_keeps_its_peer_online() -> None:
    clock = ManualClock()
    p = presence(clock)
    p.heartbeat("honest", beat(clock, 0))
    p.heartbeat("dead", beat(clock, 0))
    to(clock, 10.0)  # as far as the consumer got, both were silent for 10 intervals
    waited: list[float] = []

    async def caught_up() -> None:  # the backlog drains, honest's late heartbeat with it
        waited.append(clock.monotonic())
        to(clock, 14.0)
        p.heartbeat("honest", beat(clock, 1))

    p.judge_after(caught_up)
    await p.sweep()
    assert waited == [10.0]
    assert p.tracker.overdue(clock.monotonic()) is False
    honest, dead = p.tracker.get("honest"), p.tracker.get("dead")
    assert honest is not None and honest.online
    assert dead is not None and not dead.online  # silence is still silence


async def test_nobody_overdue_means_no_wait() -> None:
    clock = ManualClock()
    p = presence(clock)
    p.heartbeat("peer", beat(clock, 0))
    to(clock, 2.0)

    async def caught_up() -> None:
        raise AssertionError("waited for the queue with nobody overdue")

    p.judge_after(caught_up)
    await p.sweep()
    record = p.tracker.get("peer")
    assert record is not None and record.online


async def test_without_a_consumer_to_wait_for_the_sweep_judges_by_what_it_has() -> None:
    clock = ManualClock()
    p = presence(clock)
    p.heartbeat("peer", beat(clock, 0))
    to(clock, 10.0)
    await p.sweep()
    record = p.tracker.get("peer")
    assert record is not None and not record.online


def flood_presence(clock: ManualClock) -> Presence:
    return Presence(
        LivenessTracker(default_interval_s=1.0, stale_after=2, offline_after=3, resume_grace_s=0),
        PeerStreams(MemoryEventLog(), PeerDirectory(), producer="registry"),
        PeerDirectory(),
        clock=clock,
        flood_refusals_per_s=10,
        flood_quiet_s=2.0,
    )


async def test_a_flood_on_one_peers_key_holds_only_that_peer_until_it_ends() -> None:
    clock = ManualClock()
    p = flood_presence(clock)
    for peer in ("flooder", "honest", "dead"):
        p.heartbeat(peer, beat(clock, 0))
    for _ in range(9):
        p.refused("flooder")  # a few refusals are no flood
    assert p.tracker.get("flooder").held_until == 0.0  # type: ignore[union-attr]
    gone: list[str] = []
    for second in range(20):  # 20 s of refusals on the flooder's key, 10 a second
        to(clock, 0.5 + second)
        for _ in range(10):
            p.refused("flooder")
        p.refused(None)  # junk on no peer's key holds nobody
        p.refused("stranger")  # nor on the key of a peer not tracked
        if second % 2 == 0:
            p.heartbeat("honest", beat(clock, second))
        await p.sweep()
        gone += drain(p)
    assert not p.tracker.paused  # nobody else's liveness paused
    assert gone == ["dead"]  # the silent peer is judged during the flood, on time
    honest, flooder = p.tracker.get("honest"), p.tracker.get("flooder")
    assert honest is not None and honest.online
    assert flooder is not None and flooder.online  # held: its silence does not count
    to(clock, 21.0)  # the flood's last refusal was at 19.5: held until 21.5
    await p.sweep()
    assert flooder.online
    to(clock, 21.6)
    await p.sweep()
    assert not flooder.online  # silent for good after its flood: offline, late


async def test_refusals_on_many_keys_each_under_a_floods_rate_hold_nobody() -> None:
    clock = ManualClock()
    p = flood_presence(clock)
    peers = [f"p{i}" for i in range(20)]
    for peer in peers:
        p.heartbeat(peer, beat(clock, 0))
    for peer in peers * 9:  # 180 refusals in one second, 9 per key
        p.refused(peer)
    assert all(p.tracker.get(x).held_until == 0.0 for x in peers)  # type: ignore[union-attr]
    to(clock, 3.1)
    await p.sweep()
    assert len(drain(p)) == 20


async def test_blind_then_seeing_gives_every_peer_the_grace_to_reconnect() -> None:
    clock = ManualClock()
    p = Presence(
        LivenessTracker(
            default_interval_s=1.0,
            stale_after=2,
            offline_after=3,
            resume_grace_intervals=5,
            resume_grace_s=0,
        ),
        PeerStreams(MemoryEventLog(), PeerDirectory(), producer="registry"),
        PeerDirectory(),
        clock=clock,
    )
    p.heartbeat("back", beat(clock, 0))
    p.heartbeat("dead", beat(clock, 0))
    to(clock, 0.5)
    p.blind()  # the broker was SIGKILLed
    to(clock, 7.5)
    await p.sweep()
    p.blind()  # a reconnect attempt failed: still blind, the pause goes on
    assert drain(p) == []
    p.seeing()
    for t in (8.0, 10.0, 12.0):
        to(clock, t)
        await p.sweep()
        assert drain(p) == []
    p.heartbeat("back", beat(clock, 1))
    to(clock, 12.6)
    await p.sweep()
    assert drain(p) == ["dead"]


def drain(p: Presence) -> list[str]:
    """The peers that went offline since the last call (queued transitions: the writer
    task is not running)."""
    out = []
    while not p._pending.empty():
        t = p._pending.get_nowait()
        p._pending.task_done()
        if t.kind is TransitionKind.WENT_OFFLINE:
            out.append(t.peer_id)
    return out
