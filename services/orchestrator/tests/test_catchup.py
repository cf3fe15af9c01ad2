"""The orchestrator's read of the log: peers and datasets folded into the :class:`Directory`,
jobs folded by ``catchup.fold``, the whole log by ``catchup.replay``. Replaying
and consuming may overlap, so every fold must ignore what it has already applied."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import TypeVar

from peertrain.common.app import Ports
from peertrain.common.clock import ManualClock
from peertrain.common.eventlog import EventLog, MemoryEventLog
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.datasets import (
    ArtifactRef,
    ColumnEncoding,
    ColumnSchema,
    DatasetDeleted,
    DatasetRejected,
    DatasetSharded,
    DatasetUploaded,
    DatasetValidated,
    FeatureSpec,
    ShardRef,
)
from peertrain.common.events.models import UpdateAccepted
from peertrain.common.events.peers import (
    PEER_PROTOCOL,
    DeviceSpecs,
    GpuSpecs,
    PeerEnrolled,
    PeerRegistered,
    PeerSettingsChanged,
    PeerSpecsUpdated,
    PeerWentOffline,
    PeerWentOnline,
)
from peertrain.common.events.training import (
    JOB_EVENT_TYPES,
    IncludedUpdate,
    JobCreated,
    RoundClosed,
    RoundOpened,
    ShardingSpec,
    TaskAssigned,
)
from peertrain.common.leases import MEMBER, Holding, Leases, MemoryLeaseStore
from peertrain.common.security import ROLE_USER, Principal
from peertrain.orchestrator.application import OrchestratorApp
from peertrain.orchestrator.domain import Directory
from peertrain.orchestrator.domain.configuration import configure
from peertrain.orchestrator.usecases.catchup import FACT_TYPES, catch_up, fold, read_on, replay
from peertrain.orchestrator.usecases.jobs import read_job

SHA = "0" * 64
T0 = datetime(2026, 1, 1, tzinfo=UTC)
POSITIONS = count(1)
FEATURES = FeatureSpec(
    kind="table",
    input_shape=(4,),
    input_size=4,
    classes=("a", "b"),
    columns=(ColumnEncoding(name="x", type="numeric", offset=0, width=4),),
    label_column="y",
)


def recorded(stream: str, seq: int, data: EventData, *, at: datetime = T0) -> RecordedEvent:
    new = NewEvent.of(data, producer="test").model_copy(update={"occurred_at": at})
    return new.stored_as(stream, seq, next(POSITIONS))


def specs(device: str = "cpu", gpu_gb: float = 0.0, protocol: int = PEER_PROTOCOL) -> DeviceSpecs:
    return DeviceSpecs(
        os="linux",
        python_version="3.11",
        cpu_model="x",
        cpu_cores=4,
        cpu_threads=8,
        ram_gb=16.0,
        disk_free_gb=100.0,
        device=device,  # type: ignore[arg-type]
        gpus=(GpuSpecs(name="g", memory_gb=gpu_gb),) if gpu_gb else (),
        peertrain_version="0",
        protocol=protocol,
    )


def peer_life(peer_id: str = "p1") -> list[RecordedEvent]:
    """Enrolled, registered, online, cuda specs, shared: usable by anyone."""
    stream = f"peer:{peer_id}"
    facts: list[EventData] = [
        PeerEnrolled(peer_id=peer_id, owner_id="u1", name="box"),
        PeerRegistered(peer_id=peer_id, owner_id="u1", name="box", queue=f"peer.{peer_id}"),
        PeerWentOnline(peer_id=peer_id, interval_s=1.0),
        PeerSpecsUpdated(peer_id=peer_id, specs=specs("cuda", 24.0)),
        PeerSettingsChanged(peer_id=peer_id, shared=True, disabled=False),
    ]
    return [recorded(stream, seq, data) for seq, data in enumerate(facts, start=1)]


def artifact(key: str) -> ArtifactRef:
    return ArtifactRef(key=key, sha256=SHA, size=1)


def uploaded(dataset_id: str = "d1") -> DatasetUploaded:
    return DatasetUploaded(
        dataset_id=dataset_id,
        owner_id="u1",
        name="iris",
        filename="iris.csv",
        raw=artifact("raw"),
        holdout_fraction=0.2,
    )


def validated(dataset_id: str = "d1") -> DatasetValidated:
    return DatasetValidated(
        dataset_id=dataset_id,
        kind="table",
        rows=120,
        train_rows=100,
        holdout_rows=20,
        columns=(ColumnSchema(name="x", type="numeric"), ColumnSchema(name="y", type="label")),
        label_column="y",
        classes=("a", "b"),
        class_counts=(50, 50),
        feature_spec=FEATURES,
        train_x=artifact("x"),
        train_y=artifact("y"),
        holdout=artifact("h"),
        preview=artifact("p"),
        holdout_seed=1,
    )


# -- the directory -----------------------------------------------------------------


def test_a_peers_events_fold_into_what_selection_reads() -> None:
    d = Directory()
    enrolled, registered, online, specced, shared = peer_life()
    assert d.apply(enrolled)
    p = d.peers["p1"]
    assert (p.owner_id, p.name, p.registered, p.usable) == ("u1", "box", False, False)
    assert d.apply(registered) and p.registered and not p.usable
    assert d.apply(online) and p.usable and d.online_peers() == {"p1"}
    assert d.apply(specced)
    assert (p.device, p.memory_gb, p.cores) == ("cuda", 24.0, 4)  # the GPU's memory on cuda
    assert d.apply(shared) and p.shared and not p.disabled
    assert d.apply(
        recorded("peer:p1", 6, PeerSettingsChanged(peer_id="p1", shared=True, disabled=True))
    )
    assert p.disabled and not p.usable and d.online_peers() == set()
    assert d.apply(
        recorded("peer:p1", 7, PeerSettingsChanged(peer_id="p1", shared=False, disabled=False))
    )
    assert p.usable and not p.shared
    gone = PeerWentOffline(peer_id="p1", reason="missed_heartbeats", last_seen=T0)
    assert d.apply(recorded("peer:p1", 8, gone))
    assert not p.online and not p.usable and d.online_peers() == set()


def test_a_peer_whose_runtime_announced_an_older_protocol_is_not_usable_until_updated() -> None:
    """A runtime from before a change to its tasks would drop them (its round waiting
    out the deadline): it is left out until it announces this platform's protocol."""
    d = Directory()
    for event in peer_life()[:3]:  # enrolled, registered, online: no specs yet
        d.apply(event)
    p = d.peers["p1"]
    assert p.protocol is None and p.usable  # nothing announced yet: not held against it
    old = DeviceSpecs.model_validate(specs().model_dump(exclude={"protocol"}))  # none announced
    assert d.apply(recorded("peer:p1", 4, PeerSpecsUpdated(peer_id="p1", specs=old)))
    assert p.protocol == 1 and p.outdated and not p.usable and d.online_peers() == set()
    assert d.apply(recorded("peer:p1", 5, PeerSpecsUpdated(peer_id="p1", specs=specs())))
    assert p.protocol == PEER_PROTOCOL and p.usable and d.online_peers() == {"p1"}


def test_a_peer_event_already_applied_is_not_applied_again() -> None:
    d = Directory()
    events = peer_life()
    for e in events:
        d.apply(e)
    gone = recorded("peer:p1", 6, PeerWentOffline(peer_id="p1", reason="left", last_seen=T0))
    assert d.apply(gone)
    before = d.peers["p1"]
    snapshot = (before.online, before.seq, before.device)
    # the log replayed over the bus's deliveries: online (seq 3) must not revive it
    assert [d.apply(e) for e in events] == [False] * len(events)
    assert not d.apply(gone)
    assert (before.online, before.seq, before.device) == snapshot == (False, 6, "cuda")


def test_an_online_peer_heard_of_before_its_enrollment_is_not_usable_by_anyone() -> None:
    d = Directory()
    # the registry's stream is read from its start, but a consumer may see seq 3 first
    assert d.apply(recorded("peer:p9", 3, PeerWentOnline(peer_id="p9", interval_s=1.0)))
    p = d.peers["p9"]
    assert p.owner_id is None and not p.registered and not p.usable


def test_a_datasets_events_fold_into_its_state_and_feature_spec() -> None:
    d = Directory()
    assert d.apply(recorded("dataset:d1", 1, uploaded()))
    ds = d.datasets["d1"]
    assert (ds.owner_id, ds.name, ds.state, ds.feature_spec) == ("u1", "iris", "validating", None)
    assert d.apply(recorded("dataset:d1", 2, validated()))
    assert ds.state == "validated"
    assert ds.feature_spec == FEATURES
    assert (ds.train_rows, ds.classes) == (100, ("a", "b"))
    assert not d.apply(recorded("dataset:d1", 1, uploaded()))  # a late redelivery
    assert ds.state == "validated"
    assert d.apply(recorded("dataset:d1", 3, DatasetDeleted(dataset_id="d1", owner_id="u1")))
    assert ds.state == "deleted"

    rejected = DatasetRejected(dataset_id="d2", code="single_class", message="one class")
    assert d.apply(recorded("dataset:d2", 1, uploaded("d2")))
    assert d.apply(recorded("dataset:d2", 2, rejected))
    assert d.datasets["d2"].state == "rejected" and d.datasets["d2"].feature_spec is None


def test_events_of_other_streams_leave_the_directory_alone() -> None:
    d = Directory()
    assert not d.apply(recorded("job:j1", 1, created()))
    assert d.peers == {} and d.datasets == {}


# -- jobs: fold and replay ---------------------------------------------------------


def created(job_id: str = "j1", peers: tuple[str, ...] = ("p1",)) -> JobCreated:
    return JobCreated(
        job_id=job_id,
        owner_id="u1",
        name="j",
        dataset_id="d1",
        peers=peers,
        sharding=ShardingSpec(),
        model={"arch": "logreg"},
        training={"rounds": 2, "seed": 1},
        aggregation={},
    )


class Log(MemoryEventLog):
    """The event log in memory, remembering which types ``read_all`` was last asked for
    and which streams were read."""

    def __init__(self) -> None:
        super().__init__()
        self.types: set[str] | None = None
        self.reads: list[str] = []

    async def read_all(
        self, *, after_position: int = 0, types: Sequence[str] | None = None
    ) -> AsyncIterator[RecordedEvent]:
        self.types = None if types is None else set(types)
        async for e in super().read_all(after_position=after_position, types=types):
            yield e

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        self.reads.append(stream)
        return await super().read_stream(stream, after_seq=after_seq)


L = TypeVar("L", bound=Log)


async def holding(events: Sequence[RecordedEvent], log: L) -> L:
    """``log`` with ``events`` appended in this order, each at its seq (the positions
    are the log's own: the order of ``events``)."""
    for e in events:
        new = NewEvent(**e.model_dump(exclude={"data", "stream", "seq", "position"}), data=e.data)
        await log.append(e.stream, [new], expected_version=e.seq - 1)
    return log


def context(log: Log | None = None, leases: Holding | None = None) -> OrchestratorApp:
    """Working memory only: ``fold`` and ``replay`` touch nothing else."""
    return OrchestratorApp(Ports(log=log or Log(), leases=leases))


def test_fold_sends_facts_to_the_directory_and_job_events_to_their_job() -> None:
    app = context()
    for e in peer_life():
        assert fold(app, e) is None
    assert app.directory.peers["p1"].usable
    job = fold(app, recorded("job:j1", 1, created()))
    assert job is not None and job is app.jobs["j1"]
    assert job.created == created() and job.version == 1


def test_fold_ignores_facts_of_jobs_it_never_saw_created() -> None:
    app = context()
    sharded = recorded("sharding:jx", 1, sharded_fact("jx"))
    assert fold(app, sharded) is None
    accepted = recorded("model:jx", 1, accepted_fact("jx", "t0", "p1"))
    assert fold(app, accepted) is None
    assert app.jobs == {}


def test_a_redelivered_job_event_returns_its_job_unchanged_so_the_caller_decides_again() -> None:
    app = context()
    first = recorded("job:j1", 1, created())
    job = fold(app, first)
    assert job is not None
    again = fold(app, first)
    assert again is job and job.version == 1


def sharded_fact(job_id: str, peers: tuple[str, ...] = ("p1",)) -> DatasetSharded:
    return DatasetSharded(
        dataset_id="d1",
        job_id=job_id,
        sharding=ShardingSpec(),
        shards=tuple(
            ShardRef(key=f"s{k}", sha256=SHA, size=1, rows=50, index=k, peer_id=p)
            for k, p in enumerate(peers)
        ),
        holdout=ArtifactRef(key="h", sha256=SHA, size=1, rows=5),
        feature_spec=FEATURES,
    )


def accepted_fact(job_id: str, task_id: str, peer_id: str) -> UpdateAccepted:
    return UpdateAccepted(
        job_id=job_id,
        round=1,
        attempt=1,
        shard=0,
        task_id=task_id,
        peer_id=peer_id,
        key="u",
        sha256=SHA,
        size=1,
        norm=1.0,
        weight=50,
    )


def running_job(app: OrchestratorApp) -> list[RecordedEvent]:
    """j1 on p1: created, sharded (50 rows), configured, round 1 open, t0 assigned at T0;
    folded into ``app``, and returned in log order."""
    events = [recorded("job:j1", 1, created()), recorded("sharding:j1", 1, sharded_fact("j1"))]
    for e in events:
        fold(app, e)
    conf = configure(app.jobs["j1"], bucket="b", exchanges={})
    later = [
        recorded("job:j1", 2, conf.event),
        recorded(
            "job:j1",
            3,
            RoundOpened(
                job_id="j1",
                round=1,
                attempt=1,
                model_version=0,
                model_key="m",
                model_sha256=SHA,
                deadline=T0 + timedelta(hours=1),
            ),
        ),
        recorded(
            "job:j1",
            4,
            TaskAssigned(
                job_id="j1",
                task_id="t0",
                round=1,
                attempt=1,
                shard=0,
                peer_id="p1",
                update_key="u",
                deadline=T0 + timedelta(hours=1),
            ),
        ),
    ]
    for e in later:
        fold(app, e)
    return events + later


def test_an_accepted_update_measures_the_peers_speed_once() -> None:
    app = context()
    for e in peer_life():
        fold(app, e)
    running_job(app)
    accepted = recorded(
        "model:j1", 1, accepted_fact("j1", "t0", "p1"), at=T0 + timedelta(seconds=10)
    )
    assert fold(app, accepted) is app.jobs["j1"]
    assert app.directory.peers["p1"].rows_per_s == 5.0  # 50 rows in 10 s
    fold(app, accepted)  # redelivered: not a second observation
    assert app.directory.peers["p1"].rows_per_s == 5.0


async def test_replay_reads_facts_and_job_events_and_overlaps_consuming_freely() -> None:
    consumed = context()
    for e in peer_life():
        fold(consumed, e)
    log_events = [*peer_life(), *running_job(consumed)]
    accepted = recorded(
        "model:j1", 1, accepted_fact("j1", "t0", "p1"), at=T0 + timedelta(seconds=10)
    )
    fold(consumed, accepted)
    log_events.append(accepted)
    log_events.insert(0, recorded("dataset:d1", 1, uploaded()))
    log_events.insert(1, recorded("dataset:d1", 2, validated()))

    fresh_log = await holding(log_events, Log())
    fresh = context(fresh_log)
    assert await replay(fresh) == len(log_events)
    assert fresh_log.types == {*FACT_TYPES, *JOB_EVENT_TYPES} and fresh_log.reads == []
    assert fresh.directory.datasets["d1"].state == "validated"
    assert fresh.directory.peers["p1"].rows_per_s == 5.0
    job = fresh.jobs["j1"]
    assert job.find_task("t0") is not None and job.configured is not None

    # the start-up replay runs while the bus already delivers: folding both gives one state
    use_log(consumed, await holding(log_events, Log()))
    assert await replay(consumed) == len(log_events)
    assert consumed.directory.peers == fresh.directory.peers
    assert consumed.jobs["j1"] == job


def closed_round(app: OrchestratorApp) -> list[RecordedEvent]:
    """j1's round 1: t0's update accepted (model stream), then the round closed (job
    stream), in log order."""
    events = running_job(app)
    events.append(recorded("model:j1", 1, accepted_fact("j1", "t0", "p1")))
    events.append(
        recorded(
            "job:j1",
            5,
            RoundClosed(
                job_id="j1",
                round=1,
                attempt=1,
                reason="complete",
                included=(
                    IncludedUpdate(shard=0, peer_id="p1", task_id="t0", key="u", sha256=SHA),
                ),
            ),
        )
    )
    return events


def use_log(app: OrchestratorApp, log: EventLog) -> None:
    """Point the instance (and its repository) at another log."""
    app.ports = replace(app.ports, log=log)
    app.repository.log = log


async def test_catch_up_folds_the_jobs_streams_in_log_order() -> None:
    # An instance that folded the job up to its task, then reads on from the log: the
    # update accepted before the round closed counts in that round.
    app = context()
    log_events = closed_round(app)
    use_log(app, await holding(log_events, Log()))
    job = await catch_up(app, "j1")
    assert job is not None
    rnd = job.rounds[(1, 1)]
    assert rnd.state == "closed" and list(rnd.accepted) == [0]


async def test_a_first_load_folds_the_jobs_streams_in_log_order() -> None:
    log_events = closed_round(context())
    fresh = context(await holding(log_events, Log()))
    job = await catch_up(fresh, "j1")
    assert job is not None
    rnd = job.rounds[(1, 1)]
    assert rnd.state == "closed" and list(rnd.accepted) == [0]


async def test_a_work_queue_handler_waits_for_the_feed_to_fold_a_jobs_event() -> None:
    app = context()
    assigned = running_job(app)[-1]  # folded up to job:j1 seq 4, t0 assigned
    assert await app.folded_to("j1", 4, timeout_s=0)  # there already
    waiting = asyncio.create_task(app.folded_to("j1", 5, timeout_s=30))
    await asyncio.sleep(0)
    assert not waiting.done()
    again = assigned.data.model_copy(update={"task_id": "t1"})
    fold(app, recorded("job:j1", 5, again))
    assert app.jobs["j1"].version == 5
    async with app.folded:  # what on_fact does after each fold
        app.folded.notify_all()
    assert await waiting
    assert not await app.folded_to("j1", 6, timeout_s=0.01)  # the feed never brought it


async def test_a_job_never_heard_of_is_not_waited_for() -> None:
    app = context()
    assigned = running_job(context())[-1].data.model_copy(update={"job_id": "elsewhere"})
    fold(app, recorded("job:elsewhere", 4, assigned))  # its creation went by unheard
    assert not await app.folded_to("elsewhere", 4, timeout_s=30)
    assert not await app.folded_to("nobody", 1, timeout_s=30)


class SlowStreams(Log):
    """A log that answers stream reads only once ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.waiting = asyncio.Event()

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        self.waiting.set()
        await self.gate.wait()
        return await super().read_stream(stream, after_seq=after_seq)


async def test_a_slow_read_of_a_job_never_delays_lease_renewal() -> None:
    store, clock = MemoryLeaseStore(), ManualClock()
    other = Leases(store, "other", ttl_s=30.0, clock=clock)  # another instance holds j1
    assert await other.claim("j1")
    await other.keep(["j1"])
    app = context(leases=Leases(store, "mine", ttl_s=30.0, clock=clock))
    log_events = closed_round(app)  # folded up to the task; the log holds more
    slow = await holding(log_events, SlowStreams())
    use_log(app, slow)
    owner = Principal("u1", frozenset({ROLE_USER}), "jti", 0, 0)
    reading = asyncio.create_task(read_job(app, "j1", owner))  # GET /api/jobs/j1
    await slow.waiting.wait()  # the read is stuck in the store
    await asyncio.wait_for(app.tick(), timeout=60)  # (a hang guard, not a timing)
    assert MEMBER + "mine" in store.leases and not reading.done()  # renewed
    slow.gate.set()
    job = await reading
    assert job is app.jobs["j1"]  # nothing was deciding: folded into the job itself
    assert job.rounds[(1, 1)].state == "closed" and list(job.rounds[(1, 1)].accepted) == [0]


async def test_a_read_during_a_decision_folds_into_a_copy_and_leaves_the_job_alone() -> None:
    app = context()
    use_log(app, await holding(closed_round(app), Log()))
    job = app.jobs["j1"]
    async with app.lock:  # a decision is in flight (between its reads and its append)
        seen = await read_on(app, job)
        assert seen is not job and seen.version == 5 and seen.rounds[(1, 1)].state == "closed"
        assert job.version == 4 and job.rounds[(1, 1)].state != "closed"
    assert await read_on(app, job) is job and job.version == 5
