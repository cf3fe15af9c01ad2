"""Liveness rules with a fake clock: active -> stale -> offline, and back."""

from __future__ import annotations

import pytest

from peertrain.registry.domain.liveness import LivenessTracker, Status, TransitionKind

IV = 1.0  # the interval every peer here heartbeats at


def tracker() -> LivenessTracker:
    return LivenessTracker(
        default_interval_s=IV, stale_after=2, offline_after=3, min_interval_s=0.1
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
