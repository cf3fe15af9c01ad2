"""Presence's sweep with a fake clock: offline is judged only once the heartbeat
consumer has caught up with the moment judged (no stack)."""

from __future__ import annotations

from typing import Any, cast

from peertrain.common.events.peers import Heartbeat
from peertrain.registry.domain.liveness import LivenessTracker
from peertrain.registry.projections import Directory
from peertrain.registry.usecases.presence import Clock, Presence
from peertrain.registry.usecases.streams import PeerStreams


class FakeClock(Clock):
    def __init__(self) -> None:
        self.t = 0.0

    def mono(self) -> float:
        return self.t

    def wall(self) -> float:
        return 1_800_000_000.0 + self.t


def presence(clock: FakeClock) -> Presence:
    directory = Directory()
    tracker = LivenessTracker(default_interval_s=1.0, stale_after=2, offline_after=3)
    # the sweep only queues transitions: the log behind the streams is never reached
    streams = PeerStreams(cast(Any, None), directory, producer="registry")
    return Presence(tracker, streams, directory, clock=clock)


def beat(clock: FakeClock, seq: int) -> Heartbeat:
    return Heartbeat(session="s", seq=seq, sent_at=clock.wall(), interval_s=1.0)


async def test_a_heartbeat_waiting_in_the_queue_keeps_its_peer_online() -> None:
    clock = FakeClock()
    p = presence(clock)
    p.heartbeat("honest", beat(clock, 0))
    p.heartbeat("dead", beat(clock, 0))
    clock.t = 10.0  # as far as the consumer got, both were silent for 10 intervals
    waited: list[float] = []

    async def caught_up() -> None:  # the backlog drains, honest's late heartbeat with it
        waited.append(clock.t)
        clock.t = 14.0
        p.heartbeat("honest", beat(clock, 1))

    p.judge_after(caught_up)
    await p.sweep()
    assert waited == [10.0]
    assert p.tracker.overdue(clock.t) is False
    honest, dead = p.tracker.get("honest"), p.tracker.get("dead")
    assert honest is not None and honest.online
    assert dead is not None and not dead.online  # silence is still silence


async def test_nobody_overdue_means_no_wait() -> None:
    clock = FakeClock()
    p = presence(clock)
    p.heartbeat("peer", beat(clock, 0))
    clock.t = 2.0

    async def caught_up() -> None:
        raise AssertionError("waited for the queue with nobody overdue")

    p.judge_after(caught_up)
    await p.sweep()
    record = p.tracker.get("peer")
    assert record is not None and record.online


async def test_without_a_consumer_to_wait_for_the_sweep_judges_by_what_it_has() -> None:
    clock = FakeClock()
    p = presence(clock)
    p.heartbeat("peer", beat(clock, 0))
    clock.t = 10.0
    await p.sweep()
    record = p.tracker.get("peer")
    assert record is not None and not record.online


async def test_a_flood_of_refused_heartbeats_pauses_liveness_until_it_ends() -> None:
    clock = FakeClock()
    p = Presence(
        LivenessTracker(default_interval_s=1.0, stale_after=2, offline_after=3),
        PeerStreams(cast(Any, None), Directory(), producer="registry"),
        Directory(),
        clock=clock,
        flood_refusals_per_s=10,
        flood_quiet_s=2.0,
    )
    p.heartbeat("honest", beat(clock, 0))
    p.heartbeat("dead", beat(clock, 0))
    for _ in range(9):
        p.refused()  # a few refusals are no flood
    assert not p.tracker.paused
    clock.t = 0.5
    for second in range(20):  # 20 s of junk, 10 a second: honest beats wait behind it
        clock.t = 0.5 + second
        for _ in range(10):
            p.refused()
        await p.sweep()
        assert p.tracker.paused
    clock.t = 20.0
    p.heartbeat("honest", beat(clock, 1))  # its beat, out from behind the junk
    clock.t = 21.0
    await p.sweep()
    assert p.tracker.paused  # quiet for only 1.5 s
    clock.t = 22.0
    await p.sweep()
    assert not p.tracker.paused
    honest, dead = p.tracker.get("honest"), p.tracker.get("dead")
    assert honest is not None and honest.online
    assert dead is not None and dead.online  # its silence during the flood is excused
    clock.t = 25.6
    await p.sweep()
    assert not dead.online and not honest.online  # silent again, past their window
