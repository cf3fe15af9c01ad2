"""Asynchronous rounds (FedBuff) in the orchestrator's core: the buffer of K, next task
on acceptance, staleness, the job's end, replay."""

from __future__ import annotations

import pytest

from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.models import (
    ModelEvaluated,
    ModelExported,
    UpdateRejected,
)
from peertrain.common.events.training import (
    JobCompleted,
    JobCreated,
    RoundClosed,
    RoundOpened,
    TaskAssigned,
    TaskLost,
)
from peertrain.common.specs import AggregationSpec, derive_seed
from peertrain.common.specs.aggregation import ASYNC_SERVER_LR
from peertrain.orchestrator.domain import Job
from peertrain.orchestrator.domain import buffered as bufferedmod
from peertrain.orchestrator.domain.configuration import configure
from peertrain.orchestrator.domain.errors import JobRequestInvalid

from .test_checks import record_verdict
from .test_job import SHA, Harness


class AsyncHarness(Harness):
    """The job harness with ``aggregation.mode: async`` and every event kept (replay)."""

    def __init__(self, *, rounds: int = 3, **aggregation: object) -> None:
        self.aggregation = {"mode": "async", "buffer_size": 2, **aggregation}
        self.recorded: list[RecordedEvent] = []
        super().__init__(rounds=rounds)

    def record(self, stream: str, data: EventData) -> None:
        if isinstance(data, JobCreated):
            block = {**data.aggregation.model_dump(), **self.aggregation}
            data = data.model_copy(update={"aggregation": AggregationSpec.model_validate(block)})
        self.seq[stream] += 1
        new = NewEvent.of(data, producer="test")
        event = new.stored_as(f"{stream}:j1", self.seq[stream], next(self.positions))
        self.recorded.append(event)
        self.job.apply(event)

    def assigned(self, events: list[EventData]) -> list[TaskAssigned]:
        return [e for e in events if isinstance(e, TaskAssigned)]


def started(**kw: object) -> tuple[AsyncHarness, list[TaskAssigned]]:
    h = AsyncHarness(**kw)  # type: ignore[arg-type]
    h.step()
    h.shard()
    h.record("job", configure(h.job, bucket="b", exchanges={}).event)
    h.version(0)
    events = h.settle()
    assert isinstance(events[0], RoundOpened) and events[0].model_version == 0
    return h, h.assigned(events)


def test_a_round_closes_after_k_accepted_updates_in_arrival_order():
    h, tasks = started()
    assert [t.peer_id for t in tasks] == ["p0", "p1", "p2", "p3"]  # every idle peer
    h.accept(tasks[2])
    (again,) = h.settle()  # one of K=2: p2 trains its shard again, in round 1
    assert isinstance(again, TaskAssigned) and (again.peer_id, again.round) == ("p2", 1)
    h.accept(tasks[0])
    (closed, *_) = h.settle()
    assert isinstance(closed, RoundClosed) and closed.reason == "buffered"
    assert [(u.peer_id, u.base_version) for u in closed.included] == [("p2", 0), ("p0", 0)]
    assert h.job.buffer == []


def test_a_peer_gets_its_next_task_on_the_newest_version_as_soon_as_its_update_counts():
    h, tasks = started()
    h.accept(tasks[0])
    h.accept(tasks[1])
    (closed,) = h.settle()  # the buffer is full: nobody is given round 1 work any more
    assert isinstance(closed, RoundClosed)
    h.version(1)
    events = h.settle()
    opened = events[0]
    assert isinstance(opened, RoundOpened) and (opened.round, opened.model_version) == (2, 1)
    # only the idle peers get tasks: p2 and p3 still train on version 0
    assert [(t.peer_id, t.round) for t in h.assigned(events)] == [("p0", 2), ("p1", 2)]
    h.accept(tasks[3])  # a stale update (version 0) lands in round 2's buffer...
    (fresh,) = h.settle()  # ...and its peer is given a task right away, on version 1
    assert isinstance(fresh, TaskAssigned) and (fresh.peer_id, fresh.round) == ("p3", 2)
    h.accept(h.assigned(events)[0])
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed)
    assert [(u.peer_id, u.base_version) for u in closed.included] == [("p3", 0), ("p0", 1)]


def test_a_too_stale_update_is_refused_without_a_strike_and_its_peer_gets_a_fresh_task():
    h, tasks = started(max_staleness=0)
    h.accept(tasks[0])
    h.accept(tasks[1])
    h.settle()
    h.version(1)
    h.settle()
    t3 = tasks[3]
    h.record(
        "model",
        UpdateRejected(
            job_id="j1",
            round=t3.round,
            attempt=t3.attempt,
            shard=t3.shard,
            task_id=t3.task_id,
            peer_id=t3.peer_id,
            code="too_stale",
            reason="1 version stale",
            strike=False,
        ),
    )
    (fresh,) = h.settle()
    assert isinstance(fresh, TaskAssigned) and (fresh.peer_id, fresh.round) == ("p3", 2)
    assert h.job.strikes == {}


def test_a_buffered_update_too_stale_for_the_next_round_leaves_the_buffer():
    h, tasks = started(max_staleness=0, buffer_size=1)
    h.accept(tasks[0])
    h.accept(tasks[1])  # buffered behind round 1's one update
    (closed, *_) = h.settle()
    assert [u.peer_id for u in closed.included] == ["p0"]  # type: ignore[attr-defined]
    assert h.job.buffer == []  # version 0's update would be 1 stale in round 2


def test_the_job_ends_after_training_rounds_versions():
    h, _ = started(rounds=2)
    for version in (1, 2):
        given = h.assigned([e.data for e in h.recorded])
        live = [t for t in given if (task := h.job.find_task(t.task_id)) and task.open]
        for t in live[:2]:
            h.accept(t)
        (closed,) = [e for e in h.settle() if isinstance(e, RoundClosed)]
        assert closed.round == version
        h.version(version)
        h.settle()
    h.record(
        "model",
        ModelEvaluated(
            job_id="j1", version=2, loss=0.1, accuracy=0.9, per_class_accuracy=(0.9,), samples=5
        ),
    )
    h.record(
        "model",
        ModelExported(
            job_id="j1",
            version=2,
            pt_key="a",
            pt_sha256=SHA,
            safetensors_key="b",
            safetensors_sha256=SHA,
        ),
    )
    (completed,) = h.settle()
    assert isinstance(completed, JobCompleted) and completed.final_version == 2
    assert h.job.state == "completed"


def test_a_shard_trained_again_in_one_round_draws_a_seed_of_its_own():
    h, tasks = started(buffer_size=3)
    h.accept(tasks[0])
    (again,) = h.settle()
    first, second = (h.job.dispatch(t.task_id) for t in (tasks[0], again))
    assert second is not None and first is None  # the first is answered: nothing to send
    assert second.seed != derive_seed(1, 1, 0) and second.seed == derive_seed(1, 1, 0, 1)
    h.record(
        "model",
        UpdateRejected(
            job_id="j1",
            round=1,
            attempt=1,
            shard=0,
            task_id=again.task_id,
            peer_id="p0",
            code="non_finite",
            reason="x",
        ),
    )
    (retry,) = h.settle()  # refused: the retry keeps the seed (an honest retry is the same)
    assert h.job.dispatch(retry.task_id).seed == second.seed  # type: ignore[union-attr]


def test_replaying_the_log_gives_the_same_rounds_and_buffer():
    h, tasks = started()
    h.accept(tasks[1])
    h.accept(tasks[3])
    h.settle()
    h.version(1)
    h.settle()
    h.accept(tasks[0])
    h.settle()
    again = Job("j1")
    for event in h.recorded:
        again.apply(event)
    assert again.buffer == h.job.buffer and [u.peer_id for u in again.buffer] == ["p0"]
    assert {k: r.state for k, r in again.rounds.items()} == {
        k: r.state for k, r in h.job.rounds.items()
    }
    closed = [e.data for e in h.recorded if isinstance(e.data, RoundClosed)]
    assert [u.peer_id for u in closed[0].included] == ["p1", "p3"]


def test_a_buffer_larger_than_the_job_s_peers_is_refused_when_the_job_is_created():
    from .test_plan_job import directory, peer, plan

    d = directory(peer("p1"), peer("p2"))
    with pytest.raises(JobRequestInvalid) as refused:
        plan(d, peers=["p1", "p2"], aggregation={"mode": "async", "buffer_size": 3})
    assert [p["loc"] for p in refused.value.detail] == ["aggregation.buffer_size"]
    accepted = plan(d, peers=["p1", "p2"], aggregation={"mode": "async", "buffer_size": 2})
    assert accepted.peers == ("p1", "p2")


# -- checked work (aggregation.verify) in asynchronous rounds ---------------------------

VERIFY = {"verify": {"share": 1e-9, "probation": 1}}


verdict = record_verdict


def pairs(tasks: list[TaskAssigned]) -> list[tuple[TaskAssigned, TaskAssigned]]:
    by_id = {t.task_id: t for t in tasks}
    return [(by_id[t.checks], t) for t in tasks if t.checks is not None and t.checks in by_id]


def test_a_checked_update_waits_out_of_the_buffer_until_its_check_confirms_it():
    h, tasks = started(**VERIFY)
    # on probation every task is checked, by a peer with nothing else to do first
    assert [(p.peer_id, c.peer_id) for p, c in pairs(tasks)] == [("p0", "p1"), ("p2", "p3")]
    (a, check_a), (b, check_b) = pairs(tasks)
    h.accept(a)
    h.accept(b)
    events = h.settle()  # both are buffered, neither is confirmed yet: no version
    assert not any(isinstance(e, RoundClosed) for e in events)
    assert [u.task_id for u in h.job.buffer] == [a.task_id, b.task_id]
    h.accept(check_b)
    verdict(h, check_b, b, agree=True)
    assert not any(isinstance(e, RoundClosed) for e in h.settle())  # one of K=2
    h.accept(check_a)
    verdict(h, check_a, a, agree=True)
    (closed,) = [e for e in h.settle() if isinstance(e, RoundClosed)]
    assert [u.task_id for u in closed.included] == [a.task_id, b.task_id]  # arrival order
    assert h.job.confirmations == {"p0": 1, "p2": 1} and not h.job.strikes


def test_a_struck_checked_update_makes_way_for_the_confirmed_one_in_its_place():
    h, tasks = started(**VERIFY)
    (a, check_a), (b, check_b) = pairs(tasks)
    h.accept(a)
    h.accept(check_a)
    verdict(h, check_a, a, agree=False)
    (tie,) = [t for t in h.assigned(h.settle()) if t.checks == a.task_id]
    assert tie.round == a.round and tie.peer_id not in ("p0", "p1")
    h.accept(tie)
    verdict(h, tie, a, agree=False)
    verdict(h, tie, check_a, agree=True)
    assert [s.code for s in h.job.strikes["p0"]] == ["check_mismatch"]
    h.accept(b)
    h.accept(check_b)
    verdict(h, check_b, b, agree=True)
    (closed,) = [e for e in h.settle() if isinstance(e, RoundClosed)]
    assert [(u.task_id, u.base_version) for u in closed.included] == [
        (check_a.task_id, 0),
        (b.task_id, 0),
    ]


def test_a_check_trains_its_task_s_seed_and_its_peer_waits_for_the_verdict():
    h, tasks = started(**VERIFY)
    (a, check_a), _ = pairs(tasks)
    first, its_check = h.job.dispatch(a.task_id), h.job.dispatch(check_a.task_id)
    assert first is not None and its_check is not None
    assert its_check.seed == first.seed == derive_seed(1, 1, 0)
    h.accept(a)
    # p0's update waits for its check: p0 gets nothing new (checks never pile up)
    assert not [t for t in h.assigned(h.settle()) if t.peer_id == "p0"]
    h.accept(check_a)
    verdict(h, check_a, a, agree=True)
    again = next(t for t in h.assigned(h.settle()) if t.peer_id == "p0" and t.checks is None)
    assert again.shard == 0 and again.round == 1
    # its second task of the shard in the round: a seed of its own (the check not counted)
    assert h.job.dispatch(again.task_id).seed == derive_seed(1, 1, 0, 1)  # type: ignore[union-attr]


def test_a_checked_update_whose_check_is_lost_is_never_aggregated_and_its_peer_goes_on():
    h, tasks = started(**VERIFY)
    (a, check_a), (b, check_b) = pairs(tasks)
    h.accept(a)
    h.online.discard(check_a.peer_id)  # the checker leaves: its check is lost
    events = h.settle()
    assert any(isinstance(e, TaskLost) and e.task_id == check_a.task_id for e in events)
    # nothing can confirm a's update now: it stays out of every version, and p0 trains on
    assert any(t.peer_id == "p0" and t.checks is None for t in h.assigned(events))
    assert bufferedmod.admissible(h.job, 0) == []
    h.accept(b)
    h.accept(check_b)
    verdict(h, check_b, b, agree=True)
    assert [u.task_id for u in bufferedmod.admissible(h.job, 0)] == [b.task_id]


def test_a_dispute_nobody_online_can_break_lets_the_update_in_as_a_synchronous_round_does():
    h, tasks = started(**VERIFY, buffer_size=1)
    (a, check_a), _ = pairs(tasks)
    h.accept(a)
    h.accept(check_a)
    h.online = {"p0", "p1"}  # the others are gone: nobody can break a tie
    verdict(h, check_a, a, agree=False)
    events = h.settle()
    # no tie-break can be given: the job moves on with the checked update, unconfirmed
    (closed,) = [e for e in events if isinstance(e, RoundClosed)]
    assert [u.task_id for u in closed.included] == [a.task_id]
    assert not any(isinstance(e, TaskAssigned) and e.checks == a.task_id for e in events)


def test_a_due_tie_break_is_given_and_the_update_waits_for_it():
    h, tasks = started(**VERIFY, buffer_size=1)
    (a, check_a), _ = pairs(tasks)
    h.accept(a)
    h.accept(check_a)
    verdict(h, check_a, a, agree=False)
    events = h.settle()
    (tie,) = [e for e in h.assigned(events) if e.checks == a.task_id]
    assert tie.peer_id not in ("p0", "p1")
    assert not any(isinstance(e, RoundClosed) for e in events)  # a's update waits
    assert h.job.buffer[0].task_id == a.task_id
    assert bufferedmod.admissible(h.job, 0) == []


def test_replaying_an_asynchronous_log_with_checks_gives_the_same_buffer():
    h, tasks = started(**VERIFY)
    (a, check_a), (b, _) = pairs(tasks)
    h.accept(a)
    h.accept(b)
    h.accept(check_a)
    verdict(h, check_a, a, agree=False)
    h.settle()
    again = Job("j1")
    for event in h.recorded:
        again.apply(event)
    assert again.buffer == h.job.buffer
    assert bufferedmod.admissible(again, 0) == bufferedmod.admissible(h.job, 0) == []


def test_a_new_asynchronous_job_records_its_server_step():
    from .test_plan_job import directory, peer, plan

    d = directory(peer("p1"), peer("p2"))

    def step(**aggregation: object) -> float | None:
        return plan(d, peers=["p1", "p2"], aggregation=aggregation).aggregation.server_lr

    assert step(mode="async") == ASYNC_SERVER_LR == 0.5  # 1.0 overshoots (see its note)
    assert step(mode="async", server_lr=1.0) == 1.0  # named: kept
    assert step(mode="async", strategy="fedadam") is None  # FedAdam's own default (0.1)
    assert step() is None  # synchronous jobs as before


def test_an_asynchronous_round_s_view_and_metrics_count_its_buffer():
    from peertrain.common.events.models import ModelEvaluated as Evaluated
    from peertrain.orchestrator.api.views import JobMetrics, RoundPublic

    h, tasks = started(buffer_size=2)
    h.accept(tasks[0])
    h.accept(tasks[2])
    (closed, *_) = h.settle()
    assert isinstance(closed, RoundClosed)
    rnd = h.job.rounds[(1, 1)]
    view = RoundPublic.of(rnd, h.job)
    assert (view.closes_on, view.accepted, view.close_reason) == (2, [0, 2], "buffered")
    h.version(1)
    h.record(
        "model",
        Evaluated(job_id="j1", version=1, loss=0.5, accuracy=0.8, per_class_accuracy=(), samples=4),
    )
    (metrics,) = JobMetrics.of(h.job).rounds
    assert (metrics.peers, metrics.bytes_up) == (2, 2)  # two updates of 1 byte each
    assert h.job.update_sizes == {}  # what a round included is counted there, not kept
    h.settle()
    assert RoundPublic.of(h.job.rounds[(2, 1)], h.job).accepted == []  # round 2 is open
