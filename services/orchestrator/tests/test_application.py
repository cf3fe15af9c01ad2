"""The orchestrator's application driven as the platform drives it, on in-memory ports:
every appended event goes through ``ORCHESTRATOR_SUBSCRIPTIONS`` (``deliver``), time is a
:class:`ManualClock` moved by hand, and what peers are told lands in a
:class:`MemoryPublisher`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from peertrain.common.app import MemoryPublisher, Ports, deliver
from peertrain.common.blobs import MemoryBlobStore
from peertrain.common.clock import ManualClock
from peertrain.common.eventlog import ConcurrencyError, MemoryEventLog
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.datasets import (
    ArtifactRef,
    ColumnEncoding,
    ColumnSchema,
    DatasetSharded,
    DatasetUploaded,
    DatasetValidated,
    FeatureSpec,
    ShardRef,
)
from peertrain.common.events.models import ModelVersionCreated, UpdateAccepted
from peertrain.common.events.peers import PeerRegistered, PeerWentOnline
from peertrain.common.events.tasks import (
    ACCEPTED,
    PROGRESS,
    CancelMessage,
    TaskAcceptedBody,
    TaskMessage,
    TaskProgressBody,
)
from peertrain.common.events.training import ShardingSpec
from peertrain.common.leases import Leases, MemoryLeaseStore, SoleInstance
from peertrain.common.security import ROLE_USER, PassOn, PeerMessage, Principal
from peertrain.orchestrator.application import ORCHESTRATOR_SUBSCRIPTIONS, OrchestratorApp
from peertrain.orchestrator.config import OrchestratorSettings
from peertrain.orchestrator.domain import Job
from peertrain.orchestrator.domain.job_request import JobRequest

SHA = "0" * 64
T0 = datetime(2026, 1, 1, tzinfo=UTC)
USER = Principal("u1", frozenset({ROLE_USER}), "jti", 0, 0)
PEERS = ("p1", "p2")
FEATURES = FeatureSpec(
    kind="table",
    input_shape=(4,),
    input_size=4,
    classes=("a", "b"),
    columns=(ColumnEncoding(name="x", type="numeric", offset=0, width=4),),
    label_column="y",
)


def artifact(key: str, rows: int | None = None) -> ArtifactRef:
    return ArtifactRef(key=key, sha256=SHA, size=1, rows=rows)


class Platform:
    """The orchestrator with in-memory ports; whatever is appended (by the test, as
    another service would, or by the orchestrator itself) reaches it in log order."""

    def __init__(self, settings: OrchestratorSettings | None = None) -> None:
        self.log = MemoryEventLog()
        self.clock = ManualClock(T0)
        self.publisher = MemoryPublisher()
        self.blobs = MemoryBlobStore()
        self.app = OrchestratorApp(
            Ports(
                log=self.log,  # type: ignore[arg-type]
                blobs=self.blobs,  # type: ignore[arg-type]
                clock=self.clock,
                publisher=self.publisher,
                leases=SoleInstance(),
            ),
            settings,
        )
        self.inbox: list[RecordedEvent] = []
        self.log.on_append(self.inbox.extend)

    async def settle(self) -> None:
        """Deliver everything appended so far, and what that appends, until quiet."""
        while self.inbox:
            event = self.inbox.pop(0)
            await deliver(ORCHESTRATOR_SUBSCRIPTIONS, self.app, event)

    async def append(self, stream: str, *data: EventData, producer: str = "test") -> None:
        """Another service appends to ``stream``; the bus brings it."""
        new = [NewEvent.of(d, producer=producer) for d in data]
        await self.log.append(stream, new, expected_version=await self.log.stream_version(stream))
        await self.settle()

    def types(self, stream: str = "job:") -> list[str]:
        return [e.type for e in self.log.events if e.stream.startswith(stream)]

    def sent(self, kind: str) -> list[str]:
        """Routing keys of the messages of ``kind`` sent to peers."""
        return [m.routing_key for m in self.publisher.sent if m.routing_key.endswith(f".{kind}")]

    async def report(self, peer_id: str, task: TaskMessage) -> None:
        """The peer took its task on (its trainer's first message)."""
        await self.app.on_peer(PeerMessage(peer_id, ACCEPTED, accepted_body(task), USER, None))
        await self.settle()


async def ready_platform(settings: OrchestratorSettings | None = None) -> Platform:
    """Two peers of the user's registered and online, a validated dataset."""
    p = Platform(settings)
    for peer_id in PEERS:
        registered = PeerRegistered(
            peer_id=peer_id, owner_id="u1", name=peer_id, queue=f"peer.{peer_id}"
        )
        online = PeerWentOnline(peer_id=peer_id, interval_s=5.0)
        await p.append(f"peer:{peer_id}", registered, online, producer="registry")
    uploaded = DatasetUploaded(
        dataset_id="d1",
        owner_id="u1",
        name="iris",
        filename="iris.csv",
        raw=artifact("raw"),
        holdout_fraction=0.2,
    )
    validated = DatasetValidated(
        dataset_id="d1",
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
    await p.append("dataset:d1", uploaded, validated, producer="dataset")
    return p


async def running(
    aggregation: dict[str, object] | None = None, settings: OrchestratorSettings | None = None
) -> tuple[Platform, Job]:
    """A job created on both peers, sharded, its v0 stored: round 1 open."""
    p = await ready_platform(settings)
    request = JobRequest.model_validate(
        {
            "name": "j",
            "dataset_id": "d1",
            "peers": list(PEERS),
            "model": {"arch": "logreg"},
            "training": {"rounds": 1, "seed": 1},
            "aggregation": aggregation or {},
        }
    )
    job = await p.app.create_job(request, USER)
    await p.settle()
    j = job.job_id
    assert job.created is not None
    shards = tuple(
        ShardRef(key=f"s{k}", sha256=SHA, size=1, rows=50, index=k, peer_id=peer)
        for k, peer in enumerate(job.created.peers)
    )
    sharded = DatasetSharded(
        dataset_id="d1",
        job_id=j,
        sharding=ShardingSpec(),
        shards=shards,
        holdout=artifact("h", rows=20),
        feature_spec=FEATURES,
    )
    await p.append(f"sharding:{j}", sharded, producer="dataset")
    v0 = ModelVersionCreated(job_id=j, version=0, key="m0", sha256=SHA, size=1, strategy="fedavg")
    await p.append(f"model:{j}", v0, producer="aggregator")
    return p, job


def accepted(task: TaskMessage, peer_id: str) -> UpdateAccepted:
    return UpdateAccepted(
        job_id=task.job_id,
        round=task.round,
        attempt=task.attempt,
        shard=task.shard,
        task_id=task.task_id,
        peer_id=peer_id,
        key=task.upload.key,
        sha256=SHA,
        size=1,
        norm=1.0,
        weight=50,
    )


def tasks(p: Platform) -> list[tuple[str, TaskMessage]]:
    """The task messages sent, with the peer each went to."""
    return [
        (m.routing_key.split(".")[1], TaskMessage.model_validate_json(m.body))
        for m in p.publisher.sent
        if m.routing_key.endswith(".task")
    ]


def in_order(found: Sequence[str], *wanted: str) -> bool:
    """Whether ``wanted`` occur in ``found`` in this order."""
    it = iter(found)
    return all(w in it for w in wanted)


async def test_a_created_job_is_configured_opens_a_round_and_sends_each_peer_its_task() -> None:
    p, job = await running()
    assert in_order(p.types(), "job.created", "job.configured", "round.opened", "task.assigned")
    assert job.configured is not None and job.configured.config_key in p.blobs.objects
    sent = tasks(p)
    assert sorted(peer for peer, _ in sent) == ["p1", "p2"]
    assert {t.shard for _, t in sent} == {0, 1} and all(t.round == 1 for _, t in sent)
    assert all(t.model.key == "m0" and t.deadline > T0 for _, t in sent)
    # the spec less its columns' encodings (a peer trains on encoded shards): what sizes
    # the model, without a wide table's columns in every message
    spec = job.configured.feature_spec
    assert spec.columns and all(t.feature_spec == spec.for_peers() for _, t in sent)
    assert all(t.feature_spec.columns == () for _, t in sent)
    assert all(t.feature_spec.data_shape == spec.data_shape for _, t in sent)
    # the bus brings task.assigned back to the dispatch queue: nothing is sent twice
    assert len(p.sent("task")) == 2


async def test_a_job_has_a_secret_check_key_that_no_peer_is_sent() -> None:
    p, job = await running({"verify": {"share": 0.05}})
    assert job.configured is not None and job.configured.check_key is not None
    key = str(job.configured.check_key).encode()
    assert key not in p.blobs.objects[job.configured.config_key]  # not in config.json
    assert p.sent("task") and not [m for m in p.publisher.sent if key.decode() in m.body]
    _, again = await running({"verify": {"share": 0.05}})
    assert again.configured is not None and again.configured.check_key != int(key)


async def test_reports_and_accepted_updates_close_the_round() -> None:
    p, job = await running()
    for peer, task in tasks(p):
        await p.report(peer, task)
    assert p.types().count("task.accepted") == 2
    for peer, task in tasks(p):
        await p.append(f"model:{job.job_id}", accepted(task, peer), producer="aggregator")
    rnd = job.rounds[(1, 1)]
    assert rnd.state == "closed" and rnd.close_reason == "complete"
    assert sorted(rnd.accepted) == [0, 1]


def accepted_body(task: TaskMessage) -> TaskAcceptedBody:
    return TaskAcceptedBody(
        task_id=task.task_id,
        job_id=task.job_id,
        round=task.round,
        attempt=task.attempt,
        shard=task.shard,
        device="cpu",
    )


async def test_a_jobs_reports_are_recorded_together_in_one_append() -> None:
    p, job = await running()
    appends: list[list[str]] = []
    p.log.on_append(lambda events: appends.append([e.type for e in events]))
    reports = [PeerMessage(peer, ACCEPTED, accepted_body(t), USER, None) for peer, t in tasks(p)]
    # as the bus hands them over: each handler returns once its report is recorded
    await asyncio.gather(*(p.app.on_peer(m) for m in reports))
    assert appends == [["task.accepted", "task.accepted"]]
    actors = [e.actor for e in p.log.events if e.type == "task.accepted"]
    assert sorted(actors) == sorted(PEERS)  # each event names the peer that reported
    assert p.app.reports == {}
    # a report said again is no news: nothing appended
    await p.app.on_peer(reports[0])
    assert len(appends) == 1 and {t.state for t in job.current.tasks.values()} == {"accepted"}


async def test_a_report_that_ends_a_tasks_training_has_its_batch_recorded_at_once() -> None:
    p, _ = await running(settings=OrchestratorSettings(report_linger_s=5))
    appends: list[list[str]] = []
    p.log.on_append(lambda events: appends.append([e.type for e in events]))
    (first, t1), (second, t2) = tasks(p)
    taken = asyncio.create_task(
        p.app.on_peer(PeerMessage(first, ACCEPTED, accepted_body(t1), USER, None))
    )
    await asyncio.sleep(0)  # its batch lingers
    ref = accepted_body(t2).model_dump(exclude={"device"})
    last_epoch = TaskProgressBody(
        **ref, epoch=1, epochs=1, loss=0.5, accuracy=None, samples=10, duration_s=0.1
    )
    # its update follows at once: the batch does not wait out its 5 s
    await asyncio.wait_for(
        asyncio.gather(taken, p.app.on_peer(PeerMessage(second, PROGRESS, last_epoch, USER, None))),
        timeout=4,
    )
    assert appends == [["task.accepted", "task.progress"]]


async def test_a_batch_of_reports_that_cannot_be_recorded_fails_each_of_its_messages() -> None:
    p, _ = await running()
    reports = [PeerMessage(peer, ACCEPTED, accepted_body(t), USER, None) for peer, t in tasks(p)]
    real_append = p.log.append

    async def store_away(*args: object, **kwargs: object) -> list[RecordedEvent]:
        raise ConnectionError("the store is away")

    p.log.append = store_away  # type: ignore[method-assign]
    outcomes = await asyncio.gather(*(p.app.on_peer(m) for m in reports), return_exceptions=True)
    assert all(isinstance(o, ConnectionError) for o in outcomes)  # each delivered again
    p.log.append = real_append  # type: ignore[method-assign]
    await asyncio.gather(*(p.app.on_peer(m) for m in reports))
    assert p.types().count("task.accepted") == 2


async def test_a_deadline_passing_on_the_clock_closes_the_round_with_what_came() -> None:
    p, job = await running({"min_peers": 1})
    (peer, task), _ = tasks(p)
    await p.append(f"model:{job.job_id}", accepted(task, peer), producer="aggregator")
    await p.app.tick()
    await p.settle()
    assert job.rounds[(1, 1)].state == "open"  # the other peer still has time
    p.clock.set(task.deadline + timedelta(seconds=1))
    await p.app.tick()
    await p.settle()
    rnd = job.rounds[(1, 1)]
    assert rnd.state == "closed" and rnd.close_reason == "deadline"
    assert list(rnd.accepted) == [task.shard]


async def test_a_cancelled_job_tells_its_peers_to_stop() -> None:
    p, job = await running()
    await p.app.cancel_job(job.job_id, USER)
    await p.settle()
    assert job.terminal == "cancelled"
    cancels = [m for m in p.publisher.sent if m.routing_key.endswith(".cancel")]
    assert sorted(m.routing_key for m in cancels) == ["peer.p1.cancel", "peer.p2.cancel"]
    assert all(CancelMessage.model_validate_json(m.body).job_id == job.job_id for m in cancels)


async def test_a_cancel_is_decided_again_while_another_instance_keeps_appending() -> None:
    """The holder appends several times a second: a cancel on the other instance lost
    every try of one execute (4), and the user got 409 concurrency_conflict."""
    p, job = await running()
    real, lost = p.log.append, []

    async def busy(stream: str, events: Sequence[NewEvent], *, expected_version: int) -> Any:
        if any(e.type == "job.cancelled" for e in events) and len(lost) < 9:
            lost.append(expected_version)  # the other instance's append came first
            raise ConcurrencyError(stream, expected_version)
        return await real(stream, events, expected_version=expected_version)

    p.log.append = busy  # type: ignore[method-assign]
    await p.app.cancel_job(job.job_id, USER)
    await p.settle()
    assert len(lost) == 9 and job.terminal == "cancelled"


TTL_S = 10.0


class BrokenPublisher(MemoryPublisher):
    """A publisher whose broker link is down while ``broken``."""

    broken = False

    async def publish(self, body: str, *, exchange: str, routing_key: str, message_id: str) -> None:
        if self.broken:
            raise ConnectionError("the broker is gone")
        await super().publish(
            body, exchange=exchange, routing_key=routing_key, message_id=message_id
        )


# -- two orchestrators -------------------------------------------------------------------


class Instances:
    """Orchestrators sharing one log, driven as the platform drives them: a row of
    ``ORCHESTRATOR_SUBSCRIPTIONS`` that is ``per_instance`` reaches every live instance,
    a shared queue's row one of them in turn (competing consumers); leases in one
    :class:`MemoryLeaseStore`; each instance's messages to peers in its own publisher."""

    def __init__(self, count: int = 2) -> None:
        self.store = MemoryLeaseStore()
        self.publishers = [BrokenPublisher() for _ in range(count)]
        self.apps: list[OrchestratorApp] = []
        self.live: list[OrchestratorApp] = []
        self.turn = 0
        self.failures: list[BaseException] = []

    async def start(self) -> None:
        """The platform's ports (log, bucket, clock) from the single-instance test's
        driver, with its peers online and its dataset validated."""
        self.p = await ready_platform()
        for i, publisher in enumerate(self.publishers):
            ports = Ports(
                log=self.p.log,  # type: ignore[arg-type]
                blobs=self.p.blobs,  # type: ignore[arg-type]
                clock=self.p.clock,
                publisher=publisher,
                leases=Leases(self.store, f"o{i}", TTL_S, clock=self.p.clock),
            )
            self.apps.append(OrchestratorApp(ports))
        self.live = list(self.apps)
        for app in self.apps:  # each folds the log so far, and joins the membership
            await app.replay()
        await self.tick()

    async def settle(self) -> None:
        """Deliver what was appended, as the broker would, until quiet; a handler that
        raises is recorded (its queue would deliver the message again, to it)."""
        inbox = self.p.inbox
        while inbox:
            event = inbox.pop(0)
            for row in ORCHESTRATOR_SUBSCRIPTIONS:
                if row.peers is not None or event.type not in row.types or not self.live:
                    continue
                if row.per_instance:
                    targets = list(self.live)
                else:
                    targets = [self.live[self.turn % len(self.live)]]
                    self.turn += 1
                for app in targets:
                    await self._handle(app, row.method, event)
        await self.sent_all()

    async def _handle(self, app: OrchestratorApp, method: str, event: RecordedEvent) -> None:
        try:
            await getattr(app, method)(event)
        except Exception as exc:
            self.failures.append(exc)

    async def sent_all(self) -> None:
        """Wait for the sends the instances started in the background."""
        for app in self.live:
            await asyncio.gather(*app.dispatching.values())

    async def tick(self) -> None:
        for app in self.live:
            await app.tick()
        await self.settle()

    def holder(self, job_id: str) -> OrchestratorApp:
        (found,) = [app for app in self.live if app.leases.holds(job_id)]
        return found

    def tasks(self, i: int | None = None) -> list[tuple[str, TaskMessage]]:
        """Task messages sent (by instance ``i``, or by any), with their peers."""
        publishers = self.publishers if i is None else [self.publishers[i]]
        return [
            (m.routing_key.split(".")[1], TaskMessage.model_validate_json(m.body))
            for publisher in publishers
            for m in publisher.sent
            if m.routing_key.endswith(".task")
        ]

    async def running(self) -> Job:
        """A job on both peers, sharded, with its v0 stored (round 1 opens)."""
        request = JobRequest.model_validate(
            {
                "name": "j",
                "dataset_id": "d1",
                "peers": list(PEERS),
                "model": {"arch": "logreg"},
                "training": {"rounds": 2, "seed": 1},
            }
        )
        job = await self.apps[0].create_job(request, USER)
        await self.settle()
        await self.tick()  # the lease goes to the job's preferred instance
        assert job.created is not None
        shards = tuple(
            ShardRef(key=f"s{k}", sha256=SHA, size=1, rows=50, index=k, peer_id=peer)
            for k, peer in enumerate(job.created.peers)
        )
        sharded = DatasetSharded(
            dataset_id="d1",
            job_id=job.job_id,
            sharding=ShardingSpec(),
            shards=shards,
            holdout=artifact("h", rows=20),
            feature_spec=FEATURES,
        )
        await self.append(f"sharding:{job.job_id}", sharded, producer="dataset")
        return job

    async def store_v0(self, job_id: str) -> None:
        v0 = ModelVersionCreated(
            job_id=job_id, version=0, key="m0", sha256=SHA, size=1, strategy="fedavg"
        )
        await self.append(f"model:{job_id}", v0, producer="aggregator")

    async def append(self, stream: str, *data: EventData, producer: str) -> None:
        """Another service appends to ``stream``; the bus brings it."""
        log = self.p.log
        new = [NewEvent.of(d, producer=producer) for d in data]
        await log.append(stream, new, expected_version=await log.stream_version(stream))
        await self.settle()


async def two_instances() -> Instances:
    found = Instances()
    await found.start()
    return found


async def test_with_two_orchestrators_each_task_reaches_its_peer_once_from_the_holder() -> None:
    o = await two_instances()
    job = await o.running()
    await o.store_v0(job.job_id)
    holder = o.apps.index(o.holder(job.job_id))
    assigned = [e for e in o.p.log.events if e.type == "task.assigned"]
    assert len(assigned) == 2
    sent = o.tasks()
    # before: the shared dispatch queue gave one task.assigned of two to the other
    # instance, which sent it again
    assert sorted(t.task_id for _, t in sent) == sorted(e.data.task_id for e in assigned)
    assert sorted(peer for peer, _ in sent) == sorted(PEERS)
    assert o.tasks(1 - holder) == []
    assert not o.failures


async def test_a_report_first_delivered_to_an_instance_not_holding_its_job_is_passed_on() -> None:
    """The instances share the queue of reports: the one that does not hold the job
    hands a first delivery back (to reach the holder), and records a second one."""
    o = await two_instances()
    job = await o.running()
    await o.store_v0(job.job_id)
    holder = o.holder(job.job_id)
    other = next(app for app in o.apps if app is not holder)
    (first, t1), (second, t2) = sorted(o.tasks(), key=lambda sent: sent[0])
    report = PeerMessage(first, ACCEPTED, accepted_body(t1), USER, None)
    with pytest.raises(PassOn):
        await other.on_peer(report)
    assert "task.accepted" not in [e.type for e in o.p.log.events]
    await holder.on_peer(report)
    again = PeerMessage(second, ACCEPTED, accepted_body(t2), USER, None, deliveries=1)
    await other.on_peer(again)  # a second delivery: recorded wherever it lands
    await o.settle()
    recorded = [e.data.peer_id for e in o.p.log.events if e.type == "task.accepted"]
    assert sorted(recorded) == sorted([first, second])
    assert not o.failures


async def test_a_holder_that_dies_before_sending_has_its_tasks_sent_once_by_the_next() -> None:
    o = await two_instances()
    job = await o.running()
    holder = o.holder(job.job_id)
    other = next(app for app in o.apps if app is not holder)
    h = o.apps.index(holder)
    o.publishers[h].broken = True  # assigned, then its broker link goes, then it dies
    await o.store_v0(job.job_id)
    assigned = {e.data.task_id for e in o.p.log.events if e.type == "task.assigned"}
    assert len(assigned) == 2 and o.tasks() == []  # nothing went out; the other waits
    o.live.remove(holder)
    o.p.clock.advance(TTL_S * 3)
    for _ in range(3):
        await o.tick()
    assert other.leases.holds(job.job_id)
    sent = o.tasks(1 - h)
    assert sorted(t.task_id for _, t in sent) == sorted(assigned)  # each once
    assert all(t.deadline > T0 for _, t in sent)
