"""Liveness rules with a fake clock: active -> stale -> offline, and back."""

from __future__ import annotations

import pytest

from peertrain.registry.domain.liveness import LivenessTracker, Status, TransitionKind

IV = 1.0  # the interval every peer here heartbeats at


def tracker(*, grace_intervals: float = 0.0, grace_s: float = 0.0) -> LivenessTracker:
    return LivenessTracker(
        default_interval_s=IV,
        stale_after=2,
        offline_after=3,
        min_interval_s=0.1,
        resume_grace_intervals=grace_intervals,
        resume_grace_s=grace_s,
    )


def test_first_heartbeat_goes_online_once() -> None:
    t = tracker()
    first = t.seen("p", 0.0, interval_s=IV, session="s")
    assert first is not None and first.kind is TransitionKind.WENT_ONLINE
    assert t.seen("p", 1.0, interval_s=IV, session="s") is None
    assert t.status("p", 1.0) is Status.ACTIVE


def test_active_then_stale_then_offline_by_missed_intervals() -> None:
    t = tracker()
    t.seen("p", 10.0, interval_s=IV)
    assert t.status("p", 11.9) is Status.ACTIVE
    assert t.status("p", 12.1) is Status.STALE  # 2 intervals missed: shown, not logged
    assert t.sweep(12.5) == []
    assert t.status("p", 13.1) is Status.OFFLINE
    [gone] = t.sweep(13.1)
    assert gone.kind is TransitionKind.WENT_OFFLINE and gone.reason == "missed_heartbeats"
    assert gone.last_seen == 10.0
    assert t.sweep(20.0) == []  # logged once
    back = t.seen("p", 21.0, interval_s=IV)
    assert back is not None and back.kind is TransitionKind.WENT_ONLINE
    assert t.status("p", 21.0) is Status.ACTIVE


def test_each_peer_has_its_own_interval() -> None:
    t = tracker()
    t.seen("fast", 0.0, interval_s=1.0)
    t.seen("slow", 0.0, interval_s=10.0)
    assert [x.peer_id for x in t.sweep(5.0)] == ["fast"]
    assert t.status("slow", 5.0) is Status.ACTIVE


def test_intervals_are_clamped() -> None:
    t = LivenessTracker(min_interval_s=0.5, max_interval_s=60)
    t.seen("p", 0.0, interval_s=0.001)
    record = t.get("p")
    assert record is not None and record.interval_s == 0.5


def test_leaving_is_offline_at_once_and_late_heartbeats_of_that_run_are_ignored() -> None:
    t = tracker()
    t.seen("p", 0.0, interval_s=IV, session="run1")
    bye = t.left("p", 0.5, session="run1")
    assert bye is not None and bye.kind is TransitionKind.WENT_OFFLINE and bye.reason == "left"
    assert t.status("p", 0.5) is Status.OFFLINE
    assert t.seen("p", 0.6, interval_s=IV, session="run1") is None  # in flight before goodbye
    assert t.status("p", 0.6) is Status.OFFLINE
    again = t.seen("p", 5.0, interval_s=IV, session="run2")
    assert again is not None and again.kind is TransitionKind.WENT_ONLINE


def test_an_old_runs_goodbye_after_a_new_run_started_is_ignored() -> None:
    t = tracker()
    t.seen("p", 0.0, interval_s=IV, session="run2")
    assert t.left("p", 0.1, session="run1") is None
    assert t.status("p", 0.1) is Status.ACTIVE


def test_paused_liveness_declares_nobody_offline_and_resumes_ages() -> None:
    t = tracker()
    t.seen("p", 0.0, interval_s=IV)
    t.seen("q", 0.0, interval_s=IV)
    t.pause(0.5)  # the registry went blind
    assert t.sweep(100.0) == []
    assert t.status("p", 100.0) is Status.ACTIVE  # frozen at the moment of blindness
    t.resume(100.0)  # 99.5 s of blindness do not count
    assert t.status("p", 100.0) is Status.ACTIVE
    record = t.get("p")
    assert record is not None and record.last_seen == 0.0  # the truth, for people
    t.seen("q", 101.0, interval_s=IV)
    assert t.status("p", 101.6) is Status.STALE
    [gone] = t.sweep(102.6)
    assert gone.peer_id == "p" and gone.last_seen == 0.0
    [q_gone] = t.sweep(150.0)
    assert q_gone.peer_id == "q"
    t.pause(200.0)
    t.resume(300.0)
    assert t.status("q", 300.0) is Status.OFFLINE  # offline before: blindness changes nothing
    assert t.sweep(300.0) == []  # already logged


def test_after_a_blind_spot_nobody_goes_offline_for_silence_during_the_grace() -> None:
    # The broker was away from 0.5 to 7.5 s; the peers have still to reconnect.
    t = tracker(grace_intervals=5, grace_s=0)
    t.seen("quick", 0.0, interval_s=IV)
    t.seen("slow", 0.0, interval_s=IV)
    t.seen("dead", 0.0, interval_s=IV)
    t.seen("lazy", 0.0, interval_s=4.0)  # its own interval: a longer grace
    t.pause(0.5)
    t.resume(7.5)
    for now in (8.0, 9.0, 10.0, 11.0, 12.0, 12.4):  # 5 intervals of 1 s after the resume
        t.seen("quick", now, interval_s=IV)  # back at once
        assert t.sweep(now) == [], now
        assert not t.overdue(now)
    assert t.status("slow", 12.0) is Status.STALE  # shown as late, not as gone
    gone = t.sweep(12.6)  # grace over: 3 intervals of silence (and more) count again
    assert sorted(x.peer_id for x in gone) == ["dead", "slow"]
    assert t.status("quick", 12.6) is Status.ACTIVE
    assert t.status("lazy", 12.6) is Status.ACTIVE  # 4 s interval: 20 s of grace


def test_a_peer_back_within_the_grace_stays_online_and_one_still_silent_goes_after_it() -> None:
    t = tracker(grace_intervals=5, grace_s=0)
    for peer in ("back", "dead"):
        t.seen(peer, 0.0, interval_s=IV)
    t.pause(0.5)
    t.resume(7.5)
    assert t.sweep(11.0) == []
    assert t.seen("back", 11.0, interval_s=IV) is None  # reconnected: never went offline
    assert t.sweep(12.4) == []
    gone = t.sweep(12.6)
    assert [x.peer_id for x in gone] == ["dead"]
    assert gone[0].reason == "missed_heartbeats" and gone[0].last_seen == 0.0
    assert t.status("back", 12.6) is Status.ACTIVE
    assert t.status("dead", 12.6) is Status.OFFLINE


def test_the_grace_is_at_least_its_seconds_and_scales_with_each_peers_interval() -> None:
    t = tracker(grace_intervals=5, grace_s=10)
    t.seen("fast", 0.0, interval_s=1.0)
    t.seen("slow", 0.0, interval_s=5.0)
    t.pause(1.0)
    t.resume(2.0)
    assert t.grace_s(1.0) == 10 and t.grace_s(5.0) == 25
    assert t.sweep(11.9) == []
    assert [x.peer_id for x in t.sweep(12.1)] == ["fast"]
    assert t.sweep(26.9) == []
    assert [x.peer_id for x in t.sweep(27.1)] == ["slow"]


def test_a_second_blind_spot_within_the_grace_starts_a_new_grace() -> None:
    t = tracker(grace_intervals=5)
    t.seen("p", 0.0, interval_s=IV)
    t.pause(1.0)
    t.resume(2.0)
    t.pause(4.0)
    assert t.sweep(50.0) == []  # blind again
    t.resume(50.0)
    assert t.sweep(54.9) == []
    assert [x.peer_id for x in t.sweep(55.1)] == ["p"]


def test_a_held_peer_is_not_judged_and_the_others_are() -> None:
    t = tracker()
    t.seen("flooder", 0.0, interval_s=IV)
    t.seen("dead", 0.0, interval_s=IV)
    t.hold("flooder", 10.0)
    t.hold("flooder", 5.0)  # a hold never shortens
    t.hold("nobody", 10.0)  # untracked: nothing to hold
    assert [x.peer_id for x in t.sweep(3.5)] == ["dead"]
    assert t.status("flooder", 9.0) is Status.STALE
    assert t.sweep(9.9) == []
    [gone] = t.sweep(10.1)
    assert gone.peer_id == "flooder" and gone.last_seen == 0.0


def test_seeded_online_peers_get_a_grace_period() -> None:
    t = tracker()
    t.seed("p", 50.0, interval_s=IV, online=True)
    assert t.status("p", 50.0) is Status.ACTIVE
    assert t.seen("p", 51.0, interval_s=IV) is None  # already online in the log: no event
    t.seed("q", 50.0, interval_s=None, online=True)
    [gone] = t.sweep(53.5)
    assert gone.peer_id == "q"


def test_unknown_peers_are_offline() -> None:
    assert tracker().status("nobody", 0.0) is Status.OFFLINE
    assert tracker().left("nobody", 0.0) is None


def test_thresholds_must_be_ordered() -> None:
    with pytest.raises(ValueError):
        LivenessTracker(stale_after=3, offline_after=2)


def test_overdue_says_whether_a_sweep_would_declare_anyone_offline() -> None:
    t = tracker()
    assert not t.overdue(0.0)
    t.seen("p", 0.0, interval_s=IV)
    assert not t.overdue(3.0)
    assert t.overdue(3.1)
    t.pause(3.1)
    assert not t.overdue(10.0)  # blind: nobody is due
    t.resume(3.1)
    [gone] = t.sweep(3.2)
    assert gone.peer_id == "p"
    assert not t.overdue(100.0)  # already offline
