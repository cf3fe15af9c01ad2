"""Stragglers never hold a synchronous round: over-selection and the adaptive deadline."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.models import UpdateRejected
from peertrain.common.events.training import (
    JobCreated,
    RoundClosed,
    RoundOpened,
    TaskAssigned,
    TaskLost,
)
from peertrain.common.specs import AggregationSpec
from peertrain.common.specs.aggregation import parse_aggregation_spec
from peertrain.common.specs.errors import SpecInvalid
from peertrain.orchestrator.api.views import RoundPublic
from peertrain.orchestrator.domain import Env, Job, reconcile, stragglers
from peertrain.orchestrator.domain.configuration import configure

from .test_job import PEERS, Harness


class Timed(Harness):
    """The job harness with more ``aggregation`` fields, and events stamped at its
    virtual ``now`` (task durations are measured on the events' times)."""

    def __init__(self, aggregation: dict[str, Any], **kw: Any) -> None:
        self.extra = aggregation
        self.stored: list[RecordedEvent] = []
        super().__init__(**kw)

    def record(self, stream: str, data: EventData) -> None:
        if isinstance(data, JobCreated):
            block = {**data.aggregation.model_dump(), **self.extra}
            data = data.model_copy(update={"aggregation": AggregationSpec.model_validate(block)})
        self.seq[stream] += 1
        new = NewEvent.of(data, producer="test")
        event = new.stored_as(f"{stream}:j1", self.seq[stream], next(self.positions))
        event = event.model_copy(update={"occurred_at": self.now})
        self.stored.append(event)
        self.job.apply(event)


def timed(aggregation: dict[str, Any], **kw: Any) -> Timed:
    h = Timed(aggregation, **kw)
    h.shard()
    h.record("job", configure(h.job, bucket="b", exchanges={}).event)
    h.version(0)
    return h


def tasks_of(events: list[EventData]) -> list[TaskAssigned]:
    return [e for e in events if isinstance(e, TaskAssigned)]


# -- the spec ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "shards", "size"),
    [
        ({}, 4, (4, 4)),
        ({"peers_per_round": 2}, 4, (2, 2)),
        ({"peers_per_round": 9}, 4, (4, 4)),
        ({"over_select": 1}, 4, (4, 3)),
        ({"over_select": 1, "peers_per_round": 2}, 4, (3, 2)),
        ({"over_select": 3, "min_peers": 2}, 4, (4, 2)),  # never under min_peers
        ({"over_select": 2, "peers_per_round": 3}, 4, (4, 2)),  # unchecked: n shrinks
    ],
)
def test_round_size_gives_out_n_plus_m_and_closes_on_n(
    block: dict[str, Any], shards: int, size: tuple[int, int]
) -> None:
    assert AggregationSpec.model_validate(block).round_size(shards) == size


def test_over_select_must_fit_the_job_s_peers_and_keep_min_peers() -> None:
    ok = AggregationSpec(over_select=1, min_peers=2)
    assert ok.over_select_problem(3) is None
    assert "fewer than min_peers=2" in str(ok.over_select_problem(2))
    sampled = AggregationSpec(over_select=2, peers_per_round=2)
    assert sampled.over_select_problem(4) is None
    assert "plus over_select=2 is more than the job's 3 peer(s)" in str(
        sampled.over_select_problem(3)
    )
    assert AggregationSpec().over_select_problem(1) is None


def test_adaptive_deadline_floor_above_the_deadline_is_refused() -> None:
    with pytest.raises(SpecInvalid) as caught:
        parse_aggregation_spec(
            {"deadline": "adaptive", "round_deadline_s": 30, "deadline_floor_s": 60}
        )
    assert "deadline_floor_s=60 is above round_deadline_s=30" in str(caught.value.detail)
    with pytest.raises(SpecInvalid):
        parse_aggregation_spec({"deadline": "sometimes"})
    with pytest.raises(SpecInvalid):
        parse_aggregation_spec({"over_select": -1})


def test_quantile_is_a_nearest_rank_value() -> None:
    assert stragglers.quantile([5.0, 1.0, 3.0, 2.0, 4.0], 0.9) == 5.0
    assert stragglers.quantile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0
    assert stragglers.quantile([7.0], 0.01) == 7.0
    with pytest.raises(ValueError, match="no values"):
        stragglers.quantile([], 0.5)


# -- over-selection ----------------------------------------------------------------------


def test_a_round_opens_n_plus_m_tasks_and_closes_on_the_first_n_accepted() -> None:
    h = timed({"over_select": 1, "min_peers": 2}, rounds=1)
    opened = h.settle()
    tasks = tasks_of(opened)
    assert len(tasks) == len(PEERS)  # peers_per_round None: every shard, closes on 3
    for t in tasks[:2]:
        h.accept(t)
        assert h.settle() == []
    h.accept(tasks[3])
    events = h.settle()
    (lost, closed) = events
    assert isinstance(lost, TaskLost) and lost.reason == "surplus"
    assert (lost.task_id, lost.shard, lost.peer_id) == (tasks[2].task_id, 2, PEERS[2])
    assert isinstance(closed, RoundClosed) and closed.reason == "complete"
    assert [u.shard for u in closed.included] == [0, 1, 3]
    assert h.job.strikes == {}
    assert h.job.current is not None
    view = RoundPublic.of(h.job.current, h.job)
    assert (view.shards, view.closes_on, len(view.accepted), view.surplus) == (4, 3, 3, [2])


def test_with_peers_per_round_a_seeded_sample_of_n_plus_m_the_same_on_replay() -> None:
    block = {"over_select": 1, "peers_per_round": 2}
    h = timed(block, rounds=3)
    samples = []
    for round_ in (1, 2, 3):
        tasks = tasks_of(h.settle())
        assert len(tasks) == 3
        samples.append(tuple(t.shard for t in tasks))
        h.accept(tasks[1])
        h.accept(tasks[0])
        lost, closed = h.settle()
        assert isinstance(lost, TaskLost) and lost.reason == "surplus"
        assert lost.task_id == tasks[2].task_id
        assert isinstance(closed, RoundClosed) and len(closed.included) == 2
        h.version(round_)
    assert len(set(samples)) > 1
    again = timed(block, rounds=3)
    assert tuple(t.shard for t in tasks_of(again.settle())) == samples[0]


def test_without_over_select_the_sample_is_the_one_it_always_was() -> None:
    plain = timed({"peers_per_round": 2}, rounds=1)
    assert len(tasks_of(plain.settle())) == 2
    assert stragglers.closes_on(plain.job) == 2


def test_a_late_surplus_update_is_ignored_without_a_strike() -> None:
    h = timed({"over_select": 1, "min_peers": 2}, rounds=2)
    tasks = tasks_of(h.settle())
    for t in tasks[:3]:
        h.accept(t)
    lost, closed = h.settle()
    assert isinstance(lost, TaskLost) and isinstance(closed, RoundClosed)
    late = tasks[3]
    # the aggregator refuses it (task_lost, never a strike) ...
    h.record(
        "model",
        UpdateRejected(
            job_id="j1",
            round=late.round,
            attempt=late.attempt,
            shard=late.shard,
            task_id=late.task_id,
            peer_id=late.peer_id,
            code="task_lost",
            reason="lost",
            strike=False,
        ),
    )
    # ... or, had it accepted it before it heard of the close, the round keeps its own
    h.accept(late)
    assert h.job.strikes == {}
    assert h.job.rounds[(1, 1)].state == "closed"
    assert sorted(h.job.rounds[(1, 1)].accepted) == [0, 1, 2]
    h.version(1)
    assert isinstance(h.settle()[0], RoundOpened)  # the next round goes on


def test_at_the_deadline_without_n_the_open_tasks_are_late_not_surplus() -> None:
    h = timed({"over_select": 1, "min_peers": 2}, rounds=1, deadline_s=60)
    tasks = tasks_of(h.settle())
    h.accept(tasks[0])
    h.accept(tasks[1])
    assert h.settle() == []
    h.now += timedelta(seconds=61)
    *lost, closed = h.settle()
    assert {e.reason for e in lost if isinstance(e, TaskLost)} == {"deadline"}
    assert isinstance(closed, RoundClosed) and closed.reason == "deadline"


def test_every_task_still_open_at_close_is_surplus() -> None:
    """Over-selection by two: both stragglers are ended, neither counts as failed."""
    h = timed({"over_select": 2, "min_peers": 2}, rounds=1)
    tasks = tasks_of(h.settle())
    h.accept(tasks[2])
    h.accept(tasks[0])
    events = h.settle()
    assert [e.event_type for e in events] == ["task.lost", "task.lost", "round.closed"]
    ended = [h.job.find_task(t.task_id) for t in (tasks[1], tasks[3])]
    assert [t.lost_reason if t else None for t in ended] == ["surplus", "surplus"]


# -- the adaptive deadline ---------------------------------------------------------------


def run_round(h: Timed, seconds: list[float]) -> RoundOpened:
    """Open the next round and answer task k after ``seconds[k]``, in order of time."""
    opened, *rest = h.settle()
    assert isinstance(opened, RoundOpened)
    tasks = tasks_of(rest)
    start = h.now
    for k in sorted(range(len(tasks)), key=lambda k: seconds[k]):
        h.now = start + timedelta(seconds=seconds[k])
        h.accept(tasks[k])
    closed = h.settle()
    assert isinstance(closed[-1], RoundClosed)
    h.version(opened.round)
    return opened


ADAPTIVE = {
    "deadline": "adaptive",
    "deadline_quantile": 0.75,
    "deadline_factor": 2.0,
    "deadline_floor_s": 5.0,
}


def seconds_open(opened: EventData, h: Timed) -> float:
    assert isinstance(opened, RoundOpened)
    return (opened.deadline - h.now).total_seconds()


def test_the_adaptive_deadline_is_a_multiple_of_a_quantile_of_measured_durations() -> None:
    h = timed(ADAPTIVE, rounds=4, deadline_s=600)
    first = run_round(h, [10, 20, 30, 40])
    assert (first.deadline - h.job.rounds[(1, 1)].opened_at).total_seconds() == 600
    opened, *_ = h.settle()
    assert isinstance(opened, RoundOpened)
    assert seconds_open(opened, h) == 2.0 * 30  # the 0.75 quantile of 10, 20, 30, 40
    assert stragglers.durations(h.job) == [10.0, 20.0, 30.0, 40.0]


def test_the_adaptive_deadline_stays_within_floor_and_round_deadline() -> None:
    fast = timed(ADAPTIVE, rounds=2, deadline_s=600)
    run_round(fast, [1, 1, 1, 2])
    opened, *_ = fast.settle()
    assert seconds_open(opened, fast) == 5.0  # the floor
    slow = timed(ADAPTIVE, rounds=2, deadline_s=100)
    run_round(slow, [90, 90, 90, 90])
    opened, *_ = slow.settle()
    assert seconds_open(opened, slow) == 100.0  # never above round_deadline_s


def test_the_adaptive_deadline_is_the_same_on_replay() -> None:
    h = timed(ADAPTIVE, rounds=3, deadline_s=600)
    run_round(h, [10, 20, 30, 40])
    run_round(h, [3, 4, 5, 6])
    assert stragglers.deadline_s(h.job) == 2.0 * 20  # both rounds' eight tasks
    replayed = Job("j1")
    for event in h.stored:
        replayed.apply(event)
    later = Env(now=h.now + timedelta(hours=1), online=frozenset(PEERS))
    assert stragglers.deadline_s(replayed) == stragglers.deadline_s(h.job)
    assert reconcile(replayed, later) == reconcile(h.job, later)
