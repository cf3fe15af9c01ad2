"""The job state machine: rounds, reassignment, deadlines, min_peers, completion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count

import pytest

from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.datasets import (
    ArtifactRef,
    ColumnEncoding,
    DatasetSharded,
    FeatureSpec,
    ShardRef,
)
from peertrain.common.events.models import (
    ModelDiverged,
    ModelEvaluated,
    ModelExported,
    ModelVersionCreated,
    UpdateAccepted,
    UpdateRejected,
)
from peertrain.common.events.training import (
    JobCancelled,
    JobCompleted,
    JobCreated,
    JobFailed,
    PeerExcluded,
    RoundClosed,
    RoundFailed,
    RoundOpened,
    RoundWaiting,
    ShardingSpec,
    TaskAssigned,
    TaskLost,
)
from peertrain.common.specs import AggregationSpec
from peertrain.orchestrator.api.views import JobDetail
from peertrain.orchestrator.domain import Env, Job, reconcile
from peertrain.orchestrator.domain.configuration import configure
from peertrain.orchestrator.domain.errors import JobStateConflict
from peertrain.orchestrator.domain.job import decide_cancel, decide_configured
from peertrain.orchestrator.domain.rounds import retry_delay

SHA = "0" * 64
T0 = datetime(2026, 1, 1, tzinfo=UTC)
PEERS = ("p0", "p1", "p2", "p3")


class Harness:
    """A job fed events the way the service feeds it (appending what reconcile says)."""

    def __init__(
        self,
        *,
        min_peers: int = 1,
        rounds: int = 2,
        deadline_s: float = 60,
        peers_per_round: int | None = None,
        peer_wait_s: float = 300,
        exclude_after: int = 3,
    ) -> None:
        self.job = Job("j1")
        self.seq = {"job": 0, "model": 0, "sharding": 0}
        self.positions = count(1)
        self.now = T0
        self.online = set(PEERS)
        self.record(
            "job",
            JobCreated(
                job_id="j1",
                owner_id="u1",
                name="test",
                dataset_id="d1",
                peers=PEERS,
                sharding=ShardingSpec(),
                model={"arch": "logreg"},
                training={"rounds": rounds, "seed": 1},
                aggregation={
                    "min_peers": min_peers,
                    "round_deadline_s": deadline_s,
                    "peers_per_round": peers_per_round,
                    "peer_wait_s": peer_wait_s,
                    "exclude_after": exclude_after,
                },
            ),
        )

    def record(self, stream: str, data: EventData) -> None:
        self.seq[stream] += 1
        new = NewEvent.of(data, producer="test")
        event = new.stored_as(f"{stream}:j1", self.seq[stream], next(self.positions))
        self.job.apply(event)

    def step(self) -> list[EventData]:
        """One reconcile; its events are appended (like the service does)."""
        events = reconcile(self.job, Env(now=self.now, online=frozenset(self.online)))
        for e in events:
            self.record("job", e)
        return events

    def settle(self) -> list[EventData]:
        out: list[EventData] = []
        for _ in range(20):
            events = self.step()
            if not events:
                return out
            out += events
        raise AssertionError("did not settle")

    def shard(self) -> None:
        features = FeatureSpec(
            kind="table",
            input_shape=(4,),
            input_size=4,
            classes=("a", "b"),
            columns=(ColumnEncoding(name="x", type="numeric", offset=0, width=4),),
            label_column="y",
        )
        self.record(
            "sharding",
            DatasetSharded(
                dataset_id="d1",
                job_id="j1",
                sharding=ShardingSpec(),
                shards=tuple(
                    ShardRef(key=f"s{k}", sha256=SHA, size=10, rows=10 + k, index=k, peer_id=p)
                    for k, p in enumerate(PEERS)
                ),
                holdout=ArtifactRef(key="h", sha256=SHA, size=1, rows=5),
                feature_spec=features,
            ),
        )

    def version(self, v: int) -> None:
        self.record(
            "model",
            ModelVersionCreated(
                job_id="j1", version=v, key=f"models/j1/v{v}", sha256=SHA, size=1, strategy="fedavg"
            ),
        )

    def accept(self, task: TaskAssigned, norm: float = 1.0) -> None:
        self.record(
            "model",
            UpdateAccepted(
                job_id="j1",
                round=task.round,
                attempt=task.attempt,
                shard=task.shard,
                task_id=task.task_id,
                peer_id=task.peer_id,
                key=task.update_key,
                sha256=SHA,
                size=1,
                norm=norm,
                weight=10,
            ),
        )

    def open_tasks(self) -> list[TaskAssigned]:
        rnd = self.job.current
        assert rnd is not None
        return [
            TaskAssigned(
                job_id="j1",
                task_id=t.task_id,
                round=t.round,
                attempt=t.attempt,
                shard=t.shard,
                peer_id=t.peer_id,
                update_key=t.update_key,
                deadline=t.deadline,
            )
            for t in rnd.tasks.values()
            if t.open
        ]


def configured(**kw: object) -> Harness:
    h = Harness(**kw)  # type: ignore[arg-type]
    assert h.step() == []  # waiting for sharding
    h.shard()
    assert h.job.needs_configuration
    conf = configure(h.job, bucket="b", exchanges={})
    assert conf.event.reference_weight == 46.0  # rows of every shard
    h.record("job", conf.event)
    assert h.step() == []  # waiting for v0
    h.version(0)
    return h


def test_a_round_opens_on_v0_with_one_task_per_shard_and_closes_when_all_answered():
    h = configured()
    events = h.settle()
    assert isinstance(events[0], RoundOpened) and events[0].round == 1
    tasks = [e for e in events if isinstance(e, TaskAssigned)]
    assert [(t.shard, t.peer_id) for t in tasks] == list(enumerate(PEERS))
    assert len({t.task_id for t in tasks}) == 4
    for t in tasks[:3]:
        h.accept(t)
        assert h.settle() == []
    h.accept(tasks[3])
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed) and closed.reason == "complete"
    assert [u.shard for u in closed.included] == [0, 1, 2, 3]
    assert h.settle() == []  # waits for v1
    h.version(1)
    (opened, *_) = h.settle()
    assert isinstance(opened, RoundOpened) and opened.round == 2 and opened.model_version == 1


def test_peers_per_round_gives_tasks_to_a_seeded_sample_and_closes_when_it_answered():
    h = configured(peers_per_round=2, rounds=3)
    samples = []
    for round_ in (1, 2, 3):
        events = h.settle()
        tasks = [e for e in events if isinstance(e, TaskAssigned)]
        assert len(tasks) == 2 and all(t.peer_id == PEERS[t.shard] for t in tasks)
        samples.append(tuple(t.shard for t in tasks))
        for t in tasks:
            h.accept(t)
        (closed,) = h.settle()
        assert isinstance(closed, RoundClosed) and closed.reason == "complete"
        assert [u.shard for u in closed.included] == sorted(t.shard for t in tasks)
        h.version(round_)
    assert len(set(samples)) > 1  # drawn afresh each round
    again = configured(peers_per_round=2, rounds=3)
    first = [e.shard for e in again.settle() if isinstance(e, TaskAssigned)]
    assert tuple(first) == samples[0]  # seeded: a replay draws the same sample


def test_without_peers_per_round_every_peer_trains_every_round():
    h = configured(peers_per_round=None)
    assert len([e for e in h.settle() if isinstance(e, TaskAssigned)]) == len(PEERS)
    h = configured(peers_per_round=len(PEERS) + 3)
    assert len([e for e in h.settle() if isinstance(e, TaskAssigned)]) == len(PEERS)


def test_peers_per_round_below_min_peers_is_refused():
    with pytest.raises(ValueError, match="below min_peers"):
        AggregationSpec(min_peers=3, peers_per_round=2)


def test_an_offline_peer_has_its_shard_reassigned_to_the_least_busy_online_peer():
    h = configured()
    h.settle()
    tasks = h.open_tasks()
    h.accept(tasks[0])  # p0 is done: the spare of choice
    h.settle()
    h.online.discard("p2")
    events = h.settle()
    lost, again = events
    assert isinstance(lost, TaskLost) and lost.peer_id == "p2" and lost.reason == "peer_offline"
    assert isinstance(again, TaskAssigned) and again.shard == 2 and again.peer_id == "p0"
    assert again.reassigned_from == lost.task_id
    for t in h.open_tasks():
        h.accept(t)
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed) and len(closed.included) == 4


def test_without_a_spare_the_round_closes_with_who_answered():
    h = configured()
    h.settle()
    tasks = h.open_tasks()
    h.online = {"p0"}
    h.accept(tasks[0])
    events = h.settle()
    assert sum(isinstance(e, TaskLost) for e in events) == 3
    # p0 is the only spare: it gets all three shards
    again = [e for e in events if isinstance(e, TaskAssigned)]
    assert {e.peer_id for e in again} == {"p0"} and len(again) == 3


def test_the_deadline_closes_the_round_with_the_accepted_updates():
    h = configured(deadline_s=30)
    h.settle()
    tasks = h.open_tasks()
    h.accept(tasks[1])
    h.now = T0 + timedelta(seconds=31)
    events = h.settle()
    closed = events[-1]
    assert isinstance(closed, RoundClosed) and closed.reason == "deadline"
    assert [u.shard for u in closed.included] == [1]
    assert sum(isinstance(e, TaskLost) and e.reason == "deadline" for e in events) == 3


def test_below_min_peers_the_round_is_opened_again_then_the_job_fails():
    h = configured(min_peers=3, deadline_s=10)
    h.settle()
    for attempt in (1, 2, 3):
        assert h.job.current is not None and h.job.current.attempt == attempt
        h.accept(h.open_tasks()[0])
        h.now += timedelta(seconds=11)
        events = h.settle()
        failed = next(e for e in events if isinstance(e, RoundFailed))
        assert failed.attempt == attempt and failed.accepted == 1 and failed.counted
        assert failed.retry == (attempt < 3)
        assert not any(isinstance(e, RoundOpened) for e in events)  # never in the same batch
        if failed.retry_at is not None:
            h.now = failed.retry_at
            assert isinstance(h.settle()[0], RoundOpened)
    assert isinstance(events[-1], JobFailed) and events[-1].code == "too_few_updates"
    # it says which: the last attempt's other tasks missed a deadline of 10 s, and what
    # to change
    reason = events[-1].reason
    assert "in the last, tasks without an accepted update: 3 missed the deadline" in reason
    assert "(the round's deadline: 10 s; if the slowest peers need longer, raise" in reason
    assert "aggregation.round_deadline_s, or set aggregation.deadline: adaptive" in reason
    assert h.job.state == "failed"
    assert h.settle() == []


def test_a_job_that_fails_for_refused_updates_says_so_with_their_codes():
    h = configured(min_peers=3, deadline_s=10)
    h.settle()
    for _ in range(3):  # attempts
        tasks = h.open_tasks()
        h.accept(tasks[0])
        for t in tasks[1:]:
            _reject(h, t, "norm_too_large")
        while (events := h.settle()) and not any(isinstance(e, RoundFailed) for e in events):
            for t in events:  # a refused shard is trained once more, by another peer
                if isinstance(t, TaskAssigned):
                    _reject(h, t, "norm_too_large")
        failed = next(e for e in events if isinstance(e, RoundFailed))
        if failed.retry_at is not None:
            h.now = failed.retry_at
            h.settle()
    reason = events[-1].reason
    assert isinstance(events[-1], JobFailed) and events[-1].code == "too_few_updates"
    assert "tasks without an accepted update: 6 update refused (norm_too_large)" in reason
    assert "deadline" not in reason


def _reject(h: Harness, task: TaskAssigned, code: str = "non_finite") -> None:
    h.record(
        "model",
        UpdateRejected(
            job_id="j1",
            round=task.round,
            attempt=task.attempt,
            shard=task.shard,
            task_id=task.task_id,
            peer_id=task.peer_id,
            code=code,
            reason="NaN" if code == "non_finite" else "L2 norm 3.1e+04 is over 100",
        ),
    )


def test_a_rejected_shard_is_trained_once_more_by_another_peer():
    h = configured()
    h.settle()
    tasks = h.open_tasks()
    for t in tasks[:3]:
        h.accept(t)
        h.accept(t)  # a duplicate accept changes nothing
    _reject(h, tasks[3])
    (again,) = h.settle()
    assert isinstance(again, TaskAssigned) and again.shard == 3
    assert again.peer_id != tasks[3].peer_id and again.reassigned_from == tasks[3].task_id
    _reject(h, again)  # rejected again: no third try, the round closes without shard 3
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed) and closed.reason == "resolved"
    assert [u.shard for u in closed.included] == [0, 1, 2]


def test_a_refusal_of_another_peers_announcement_never_touches_the_victims_task():
    # A hostile p0 announces updates for every other task (task ids can be guessed):
    # the aggregator refuses them as wrong_peer, with p0 as the sender.
    h = configured(min_peers=4)
    h.settle()
    tasks = h.open_tasks()
    for victim in tasks[1:]:
        h.record(
            "model",
            UpdateRejected(
                job_id="j1",
                round=victim.round,
                attempt=victim.attempt,
                shard=victim.shard,
                task_id=victim.task_id,
                peer_id="p0",
                code="wrong_peer",
                reason="not this peer's task",
            ),
        )
    assert h.settle() == []  # no retries, no lost tasks, no failed round
    assert all(t.open for t in h.job.current.tasks.values())  # type: ignore[union-attr]
    for t in tasks:
        h.accept(t)
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed) and [u.shard for u in closed.included] == [0, 1, 2, 3]


def test_a_peer_with_enough_strikes_is_excluded_and_its_shards_go_to_others():
    h = configured()  # exclude_after: 3 by default
    h.settle()
    tasks = h.open_tasks()
    mine = tasks[0]
    assert mine.peer_id == "p0"
    for victim in tasks[1:]:  # three spoofed announcements, each a strike against p0
        h.record(
            "model",
            UpdateRejected(
                job_id="j1",
                round=1,
                attempt=1,
                shard=victim.shard,
                task_id=victim.task_id,
                peer_id="p0",
                code="wrong_peer",
                reason="not this peer's task",
                strike=True,
            ),
        )
    events = h.settle()
    assert isinstance(events[0], PeerExcluded) and events[0].peer_id == "p0"
    assert events[0].strikes == 3 and "wrong_peer" in events[0].reason
    [lost] = [e for e in events if isinstance(e, TaskLost)]
    assert lost.task_id == mine.task_id and lost.reason == "excluded"
    [again] = [e for e in events if isinstance(e, TaskAssigned)]
    assert again.shard == 0 and again.peer_id != "p0"
    assert all(t.open for t in h.job.current.tasks.values() if t.peer_id != "p0")  # type: ignore[union-attr]
    for t in h.open_tasks():
        h.accept(t)
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed) and [u.shard for u in closed.included] == [0, 1, 2, 3]
    h.version(1)
    opened = h.settle()
    assigned = [e for e in opened if isinstance(e, TaskAssigned)]
    assert len(assigned) == 4 and all(e.peer_id != "p0" for e in assigned)
    assert h.settle() == []  # excluded once


def test_an_excluded_peers_update_leaves_the_open_round_and_its_shard_is_trained_again():
    h = configured()
    h.settle()
    tasks = h.open_tasks()
    mine = tasks[0]
    h.accept(mine)  # p0's (hostile, but within bounds) update got in first
    for n in range(3):
        h.record(
            "model",
            UpdateRejected(
                job_id="j1",
                round=1,
                attempt=1,
                task_id=f"guess{n}",
                peer_id="p0",
                code="unknown_task",
                reason="never assigned",
                strike=True,
            ),
        )
    events = h.settle()
    assert isinstance(events[0], PeerExcluded)
    [lost] = [e for e in events if isinstance(e, TaskLost)]
    assert lost.task_id == mine.task_id and lost.reason == "excluded"
    assert 0 not in h.job.current.accepted  # type: ignore[union-attr]
    [again] = [e for e in events if isinstance(e, TaskAssigned)]
    assert again.shard == 0 and again.peer_id != "p0"
    for t in h.open_tasks():
        h.accept(t)
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed)
    assert {u.shard: u.peer_id != "p0" for u in closed.included} == dict.fromkeys(range(4), True)


def test_without_a_spare_a_rejected_shard_is_left_out():
    h = configured()
    h.settle()
    tasks = h.open_tasks()
    for t in tasks[:3]:
        h.accept(t)
    h.online = {"p3"}  # the others answered and left: nobody to retry shard 3
    assert h.settle() == []
    _reject(h, tasks[3])
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed) and closed.reason == "resolved"
    assert [u.shard for u in closed.included] == [0, 1, 2]


def test_the_job_completes_after_the_last_version_is_exported():
    h = configured(rounds=1)
    h.settle()
    for t in h.open_tasks():
        h.accept(t)
    h.settle()
    h.version(1)
    assert h.settle() == []
    h.record("model", ModelEvaluated(job_id="j1", version=1, loss=0.5, accuracy=0.9, samples=5))
    h.record(
        "model",
        ModelExported(
            job_id="j1",
            version=1,
            pt_key="k",
            pt_sha256=SHA,
            safetensors_key="k2",
            safetensors_sha256=SHA,
        ),
    )
    (done,) = h.settle()
    assert isinstance(done, JobCompleted) and done.accuracy == pytest.approx(0.9)
    assert h.job.state == "completed"


def test_replaying_the_same_events_twice_is_harmless():
    h = configured()
    h.settle()
    before = (h.job.version, len(h.job.current.tasks))  # type: ignore[union-attr]
    # re-apply an old event: ignored by its seq
    event = RecordedEvent(
        **NewEvent.of(
            ModelVersionCreated(job_id="j1", version=0, key="x", sha256=SHA, size=1, strategy="x"),
            producer="t",
        ).model_dump(exclude={"data"}),
        data=ModelVersionCreated(job_id="j1", version=0, key="x", sha256=SHA, size=1, strategy="x"),
        stream="model:j1",
        seq=1,
        position=999,
    )
    assert h.job.apply(event) is False
    assert (h.job.version, len(h.job.current.tasks)) == before  # type: ignore[union-attr]


def test_a_user_may_have_so_many_jobs_running_and_an_admin_any() -> None:
    from peertrain.common.errors import QuotaExceeded
    from peertrain.common.security import Principal
    from peertrain.orchestrator.domain.request import check_running_quota

    running, done = Harness().job, Harness().job
    done.terminal = "completed"
    user = Principal("u1", frozenset({"user"}), "t", 0, 0)
    check_running_quota([running, done], user, 2)
    with pytest.raises(QuotaExceeded) as refused:
        check_running_quota([running, done, Harness().job], user, 2)
    assert refused.value.status_code == 403
    assert refused.value.detail == {"quota": "running_jobs", "limit": 2, "used": 2}
    admin = Principal("a", frozenset({"user", "admin"}), "t", 0, 0)
    check_running_quota([running, running], admin, 1)


def test_the_configuration_is_decided_from_the_created_and_sharded_facts() -> None:
    import hashlib
    import json

    h = Harness()
    assert not h.job.needs_configuration
    h.shard()
    conf = configure(h.job, bucket="b", exchanges={"tasks": "peertrain.peers"})
    config = json.loads(conf.data)
    assert conf.key == "jobs/j1/config.json" == conf.event.config_key
    assert conf.event.config_sha256 == hashlib.sha256(conf.data).hexdigest()
    assert config["rounds"] == conf.event.rounds == 2
    assert [s["url"] for s in config["shards"]] == [f"s3://b/s{k}" for k in range(4)]
    assert [p["peer_id"] for p in config["peers"]] == list(PEERS)
    assert config["exchanges"] == {"tasks": "peertrain.peers"}
    # the update bound left out of the job is sized for its model (10 values: the least)
    assert h.job.created is not None and h.job.created.aggregation.max_update_norm is None
    assert config["aggregation"]["max_update_norm"] == 100.0
    assert conf.event.aggregation.max_update_norm == 100.0
    assert decide_configured(h.job, conf.event) == [conf.event]
    h.record("job", conf.event)
    assert not h.job.needs_configuration
    assert decide_configured(h.job, conf.event) == []  # configured once


def test_a_task_is_sent_only_while_it_and_its_round_are_open() -> None:
    h = configured()
    h.settle()
    first, second = h.open_tasks()[:2]
    found = h.job.dispatch(first.task_id)
    assert found is not None and found.plan.index == first.shard and found.version.version == 0
    assert h.job.task_of(first.task_id, "someone-else") is None
    assert h.job.task_of(first.task_id, first.peer_id) is not None
    h.accept(first)  # answered: nothing more to send
    assert h.job.dispatch(first.task_id) is None
    (cancelled,) = decide_cancel(h.job, "u1")
    assert isinstance(cancelled, JobCancelled)
    h.record("job", cancelled)
    assert h.job.dispatch(second.task_id) is None  # the job ended
    with pytest.raises(JobStateConflict):
        decide_cancel(h.job, "u1")


# -- a job fails only for its own reasons ------------------------------------------------


def test_with_too_few_peers_online_a_round_waits_once_and_opens_when_they_are_back():
    h = configured(min_peers=2)
    h.online = {"p1"}
    (waiting,) = h.settle()
    assert isinstance(waiting, RoundWaiting)
    assert (waiting.round, waiting.attempt, waiting.online, waiting.needed) == (1, 1, 1, 2)
    assert (waiting.since, waiting.until) == (T0, T0 + timedelta(seconds=300))
    detail = JobDetail.of(h.job)
    assert detail.waiting is not None and detail.waiting.until == waiting.until
    h.now += timedelta(seconds=100)
    assert h.settle() == []  # said once; no task is sent to an offline peer
    h.online = {"p1", "p3"}
    opened, *tasks = h.settle()
    assert isinstance(opened, RoundOpened) and (opened.round, opened.attempt) == (1, 1)
    assert {t.peer_id for t in tasks if isinstance(t, TaskAssigned)} == {"p1", "p3"}
    assert h.job.waiting is None and JobDetail.of(h.job).waiting is None


def test_a_round_that_waits_past_peer_wait_s_fails_the_job_saying_so():
    h = configured(min_peers=3, peer_wait_s=120)
    h.online = set()
    (waiting,) = h.settle()
    assert isinstance(waiting, RoundWaiting) and waiting.online == 0
    h.now = waiting.until - timedelta(seconds=1)
    h.online = {"p0", "p1"}  # two are back: not enough
    assert h.settle() == []
    h.now = waiting.until
    (failed,) = h.settle()
    assert isinstance(failed, JobFailed) and failed.code == "too_few_peers_online"
    assert "round 1" in failed.reason and "2 of the job's 4 peer(s) online" in failed.reason
    assert "3 needed" in failed.reason and "aggregation.peer_wait_s" in failed.reason
    assert h.job.state == "failed" and h.settle() == []


def test_attempts_whose_peers_only_went_offline_are_not_counted_and_back_off():
    h = configured(min_peers=2)
    h.settle()
    for attempt in range(1, 6):  # more than max_attempts (3): none counts
        assert h.job.current is not None and h.job.current.attempt == attempt
        h.online = set()  # the broker went away: the registry lost every peer
        events = h.settle()
        assert sum(isinstance(e, TaskLost) and e.reason == "peer_offline" for e in events) == 4
        (failed,) = [e for e in events if isinstance(e, RoundFailed)]
        assert not failed.counted and failed.retry
        assert failed.retry_at == h.now + retry_delay(Env(h.now, frozenset()), attempt)
        assert not any(isinstance(e, RoundOpened | JobFailed) for e in events)
        assert h.settle() == []  # the backoff is not over
        h.now = failed.retry_at
        (waiting,) = h.settle()  # still nobody online: the retry waits
        assert isinstance(waiting, RoundWaiting) and waiting.attempt == attempt + 1
        h.online = set(PEERS)
        assert isinstance(h.settle()[0], RoundOpened)
    for t in h.open_tasks():
        h.accept(t)
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed) and closed.attempt == 6


def test_retries_back_off_doubling_up_to_the_cap():
    env = Env(T0, frozenset(), retry_backoff_s=2, retry_backoff_max_s=60)
    delays = [retry_delay(env, a).total_seconds() for a in (1, 2, 3, 5, 6, 99)]
    assert delays == [2, 4, 8, 32, 60, 60]


def test_an_attempt_a_peer_failed_counts_even_if_others_went_offline():
    h = configured(min_peers=3, deadline_s=10)
    h.settle()
    tasks = h.open_tasks()
    h.accept(tasks[0])
    _reject(h, tasks[1], "wrong_tensors")
    h.online = set()  # the others went offline: nobody can train shard 1 again either
    events = h.settle()
    (failed,) = [e for e in events if isinstance(e, RoundFailed)]
    assert failed.counted


def test_a_round_of_only_non_finite_updates_fails_the_job_as_diverged_and_strikes_nobody():
    h = configured(exclude_after=1)
    h.settle()
    for t in h.open_tasks():
        _reject(h, t)
    retries = [e for e in h.settle() if isinstance(e, TaskAssigned)]
    assert len(retries) == 4  # each shard once more, by another peer (same seed)
    for t in retries[:2]:
        _reject(h, t)
    for t in retries[2:]:
        _reject(h, t, "norm_too_large")
    events = h.settle()
    assert not any(isinstance(e, PeerExcluded | RoundFailed) for e in events)
    (failed,) = events
    assert isinstance(failed, JobFailed) and failed.code == "training_diverged"
    assert "round 1" in failed.reason and "6 non_finite, 2 norm_too_large" in failed.reason
    for setting in ("training.lr", "training.momentum", "aggregation.max_update_norm"):
        assert setting in failed.reason
    assert h.job.strikes == {} and h.job.excluded == {}
    assert h.settle() == []


def test_one_peers_nan_with_nobody_online_to_retry_it_is_not_called_divergence():
    h = configured(min_peers=1)
    h.settle()
    h.online = {"p3"}  # the others are gone: p3 gets every shard, and sends NaN
    h.settle()
    for t in h.open_tasks():
        assert t.peer_id == "p3"
        _reject(h, t)
    events = h.settle()
    assert not any(isinstance(e, JobFailed) for e in events)
    (failed,) = [e for e in events if isinstance(e, RoundFailed)]
    assert failed.counted and failed.retry


def test_numeric_refusals_strike_only_in_a_round_closed_with_an_honest_majority():
    h = configured(rounds=3)
    h.settle()
    tasks = h.open_tasks()
    for t in tasks[:3]:
        h.accept(t)
    _reject(h, tasks[3])  # p3 alone sends NaN: 3 accepted against 1
    assert h.job.strikes == {}  # not at once
    (again,) = h.settle()
    assert isinstance(again, TaskAssigned)
    h.accept(again)  # its shard, trained by an honest peer
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed) and len(closed.included) == 4
    assert [r.code for r in h.job.strikes["p3"]] == ["non_finite"]
    h.version(1)
    h.settle()
    tasks = h.open_tasks()
    h.accept(tasks[0])
    for t in tasks[1:]:  # a majority of large updates: the bound, not the peers
        _reject(h, t, "norm_too_large")
    h.online = set()  # p0 answered and left: nobody to retry with
    (closed,) = [e for e in h.settle() if isinstance(e, RoundClosed)]
    assert [u.peer_id for u in closed.included] == ["p0"]
    assert list(h.job.strikes) == ["p3"] and len(h.job.strikes["p3"]) == 1


def test_a_norm_outlier_is_left_out_at_close_whatever_the_order_and_strikes_its_peer():
    for order in ([0, 1, 2, 3], [3, 2, 1, 0], [2, 3, 0, 1]):
        h = configured(rounds=2)
        h.settle()
        tasks = h.open_tasks()
        norms = {0: 1.0, 1: 1.2, 2: 0.9, 3: 50.0}  # p3's is over 5 x the median 1.1
        for i in order:
            h.accept(tasks[i], norm=norms[i])
        (closed,) = h.settle()
        assert isinstance(closed, RoundClosed)
        assert [u.shard for u in closed.included] == [0, 1, 2]
        (out,) = closed.dropped
        assert (out.shard, out.peer_id, out.norm) == (3, "p3", 50.0)
        assert out.bound == pytest.approx(5 * 1.1)
        assert [r.code for r in h.job.strikes["p3"]] == ["norm_outlier"]


def test_a_round_of_honest_but_large_updates_loses_none():
    h = configured(rounds=2)
    h.settle()
    for t in h.open_tasks():
        h.accept(t, norm=1.0)
    h.settle()
    h.version(1)
    h.settle()
    tasks = h.open_tasks()  # every update 40 x the last round's: the round's own median
    for t, norm in zip(tasks, [40.0, 41.0, 39.0, 42.0], strict=True):
        h.accept(t, norm=norm)
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed) and len(closed.included) == 4
    assert closed.dropped == () and h.job.strikes == {}


def test_no_outlier_is_left_out_where_fewer_than_min_peers_would_remain():
    h = configured(min_peers=4)
    h.settle()
    for t, norm in zip(h.open_tasks(), [1.0, 1.0, 1.0, 99.0], strict=True):
        h.accept(t, norm=norm)
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed) and len(closed.included) == 4
    assert closed.dropped == ()


def test_a_non_finite_model_version_fails_the_job_as_diverged():
    h = configured(rounds=1)
    h.settle()
    for t in h.open_tasks():
        h.accept(t)
    h.settle()
    h.version(1)
    h.record(
        "model",
        ModelDiverged(job_id="j1", version=1, reason="has a non-finite loss on the holdout"),
    )
    (failed,) = h.settle()
    assert isinstance(failed, JobFailed) and failed.code == "training_diverged"
    assert "model version 1 has a non-finite loss" in failed.reason
    assert "training.lr" in failed.reason and h.job.state == "failed"


def test_an_old_logs_failed_attempt_without_retry_at_is_retried_at_once():
    h = configured(min_peers=3, deadline_s=10)
    h.settle()
    h.now += timedelta(seconds=11)
    h.record(
        "job",
        RoundFailed(job_id="j1", round=1, attempt=1, accepted=0, min_peers=3, retry=True),
    )
    opened = h.settle()[0]
    assert isinstance(opened, RoundOpened) and opened.attempt == 2
