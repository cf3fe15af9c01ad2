"""The aggregator's application driven as the platform drives it: job events through its
subscriptions (:func:`deliver`), peers' updates through ``on_peer``, leases by ``tick``;
its log, bucket and leases in memory (no stack needed)."""

from __future__ import annotations

import asyncio
import hashlib
import io
from pathlib import Path

import numpy as np
import pytest
import torch
from prometheus_client import REGISTRY

from peertrain.aggregator.application import AGGREGATOR_SUBSCRIPTIONS, AggregatorApp
from peertrain.aggregator.config import AggregatorSettings
from peertrain.aggregator.domain import codes
from peertrain.aggregator.usecases.numerics import load_state
from peertrain.common.app import Ports, deliver
from peertrain.common.blobs import MemoryBlobStore
from peertrain.common.clock import ManualClock
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events import EventData, RecordedEvent
from peertrain.common.events.datasets import ArtifactRef
from peertrain.common.events.models import (
    ModelEvaluated,
    ModelVersionCreated,
    UpdateAccepted,
    UpdateRejected,
    model_stream,
)
from peertrain.common.events.tasks import UpdateAnnounced
from peertrain.common.events.training import (
    IncludedUpdate,
    JobCancelled,
    JobConfigured,
    JobCreated,
    RoundClosed,
    TaskAssigned,
)
from peertrain.common.leases import Leases, MemoryLeaseStore, SoleInstance
from peertrain.common.security import PassOn, PeerMessage, Principal
from peertrain.ml.weights import state_to_bytes

from .conftest import JOB, announce, configured, opened, record, task

HOLDOUT_KEY = f"jobs/{JOB}/holdout.npz"


def _holdout() -> bytes:
    g = np.random.default_rng(0)
    buf = io.BytesIO()
    np.savez(buf, X=g.normal(size=(12, 6)).astype(np.float32), y=np.arange(12) % 3)
    return buf.getvalue()


class Platform:
    """One aggregator instance on an in-memory log and bucket, fed as the platform would."""

    def __init__(
        self,
        work_dir: Path,
        *,
        leases: Leases | SoleInstance | None = None,
        shared: Platform | None = None,
    ) -> None:
        self.log = shared.log if shared else MemoryEventLog()
        self.blobs = shared.blobs if shared else MemoryBlobStore()
        self.clock = ManualClock()
        ports = Ports(
            log=self.log, blobs=self.blobs, clock=self.clock, leases=leases or SoleInstance()
        )
        self.app = AggregatorApp(ports, AggregatorSettings(work_dir=work_dir))

    async def job_event(self, data: EventData) -> RecordedEvent:
        """The orchestrator appends ``data`` to the job stream; the feed delivers it."""
        event = await record(self.log, data)
        assert await deliver(AGGREGATOR_SUBSCRIPTIONS, self.app, event) == 1
        return event

    async def configure(self) -> JobConfigured:
        holdout = _holdout()
        await self.blobs.put_bytes(HOLDOUT_KEY, holdout)
        ref = ArtifactRef(key=HOLDOUT_KEY, sha256=hashlib.sha256(holdout).hexdigest(), size=1)
        cfg = configured().model_copy(update={"holdout": ref})
        await self.job_event(
            JobCreated(job_id=JOB, owner_id="u1", name="n", dataset_id="d", peers=("p0", "p1"))
        )
        await self.job_event(cfg)
        return cfg

    async def model_events(self) -> list[EventData]:
        return [e.data for e in await self.log.read_stream(model_stream(JOB))]

    async def upload(
        self, t: TaskAssigned, data: bytes, *, deliveries: int = 0, **change: object
    ) -> None:
        """Peer ``t.peer_id`` puts ``data`` at its task's key and announces it; the queue
        hands the announcement to this instance after ``deliveries`` others."""
        await self.blobs.put_bytes(t.update_key, data)
        fields: dict[str, object] = {"sha256": hashlib.sha256(data).hexdigest()}
        body = announce(t, **{**fields, "size": len(data), "samples": 30, **change})
        principal = Principal(
            subject=t.peer_id, roles=frozenset({"peer"}), token_id="t", issued_at=0, expires_at=0
        )
        message = PeerMessage(t.peer_id, "update", body, principal, None, deliveries)
        await self.app.on_peer(message)

    async def announced(self, t: TaskAssigned, data: bytes) -> PeerMessage[UpdateAnnounced]:
        """Peer ``t.peer_id`` puts ``data`` at its task's key; its announcement, to hand
        to ``on_peer`` (as many times, and as concurrently, as a test likes)."""
        await self.blobs.put_bytes(t.update_key, data)
        digest = hashlib.sha256(data).hexdigest()
        body = announce(t, sha256=digest, size=len(data), samples=30)
        principal = Principal(
            subject=t.peer_id, roles=frozenset({"peer"}), token_id="t", issued_at=0, expires_at=0
        )
        return PeerMessage(t.peer_id, "update", body, principal, None)


def _delta(base: dict[str, torch.Tensor], scale: float) -> dict[str, torch.Tensor]:
    return {k: torch.full_like(v, scale) for k, v in base.items()}


@pytest.fixture
def platform(tmp_path: Path) -> Platform:
    return Platform(tmp_path)


async def test_a_configured_job_gets_version_zero_stored_and_evaluated(platform: Platform):
    await platform.configure()
    created, evaluated = await platform.model_events()
    assert isinstance(created, ModelVersionCreated) and created.version == 0
    assert isinstance(evaluated, ModelEvaluated) and evaluated.version == 0
    assert evaluated.samples == 12
    stored = await platform.blobs.get_bytes(created.key)
    assert hashlib.sha256(stored).hexdigest() == created.sha256
    assert platform.app.active == {JOB}


async def test_updates_are_accepted_or_refused_and_a_closed_round_makes_the_next_version(
    platform: Platform,
):
    t0, t1, base = await two_tasks_open(platform)
    good = state_to_bytes(_delta(base, 0.01))
    await platform.upload(t0, good)
    await platform.upload(t1, good, sha256="f" * 64)  # not what was uploaded
    await platform.upload(t0, good)  # again: a duplicate, nothing recorded
    *_, accepted, rejected = await platform.model_events()
    assert isinstance(accepted, UpdateAccepted) and accepted.peer_id == "p0"
    assert accepted.weight == 30.0  # the shard's rows
    assert isinstance(rejected, UpdateRejected) and rejected.code == codes.SHA256_MISMATCH
    assert platform.app.rounds[JOB].keys() == {f"{accepted.key}#{accepted.sha256}"}

    inc = IncludedUpdate(
        shard=0, peer_id="p0", task_id=t0.task_id, key=accepted.key, sha256=accepted.sha256
    )
    await platform.job_event(
        RoundClosed(job_id=JOB, round=1, attempt=1, reason="deadline", included=(inc,))
    )
    *_, created, evaluated = await platform.model_events()
    assert isinstance(created, ModelVersionCreated) and created.version == 1
    assert created.lineage is not None and created.lineage.peers == ("p0",)
    assert isinstance(evaluated, ModelEvaluated) and evaluated.version == 1
    v1 = load_state(await platform.blobs.get_bytes(created.key))
    assert any(not torch.equal(v1[k], base[k]) for k in base)  # the update moved it


async def test_the_copy_of_an_update_is_kept_when_accepted_and_removed_when_refused(
    platform: Platform,
):
    # the copy is written while the update is decoded and checked: one refused by the
    # checks (not by its size or sha256, which come first) leaves none behind
    t0, t1, base = await two_tasks_open(platform)
    await platform.upload(t0, state_to_bytes(_delta(base, 0.01)))
    await platform.upload(t1, state_to_bytes(_delta(base, float("nan"))))
    *_, accepted, rejected = await platform.model_events()
    assert isinstance(accepted, UpdateAccepted) and await platform.blobs.exists(accepted.key)
    assert isinstance(rejected, UpdateRejected) and rejected.code == codes.NON_FINITE
    copies = [b.key for b in await platform.blobs.list(f"models/{JOB}/updates/")]
    assert copies == [accepted.key]


async def two_tasks_open(
    platform: Platform,
) -> tuple[TaskAssigned, TaskAssigned, dict[str, torch.Tensor]]:
    """A configured job's round 1 open with a task for p0 and one for p1; its base."""
    await platform.configure()
    await platform.job_event(opened())
    t0, t1 = task(0, "p0"), task(1, "p1")
    await platform.job_event(t0)
    await platform.job_event(t1)
    return t0, t1, load_state(await platform.blobs.get_bytes(f"models/{JOB}/v0.safetensors"))


async def test_updates_handled_at_once_are_each_recorded_once(platform: Platform):
    t0, t1, base = await two_tasks_open(platform)
    m0 = await platform.announced(t0, state_to_bytes(_delta(base, 0.01)))
    m1 = await platform.announced(t1, state_to_bytes(_delta(base, -0.02)))
    # as the bus hands them over: downloaded and checked side by side, one delivered twice
    await asyncio.gather(*(platform.app.on_peer(m) for m in (m0, m1, m0)))
    accepted = [e for e in await platform.model_events() if isinstance(e, UpdateAccepted)]
    assert sorted(a.peer_id for a in accepted) == ["p0", "p1"]
    # every task of the round has its update: the version is made before the round closes
    assert platform.app.early[JOB].keys == {f"{a.key}#{a.sha256}" for a in accepted}


async def test_a_version_made_early_is_made_again_when_its_round_closes_on_other_updates(
    platform: Platform,
):
    t0, t1, base = await two_tasks_open(platform)
    await platform.upload(t0, state_to_bytes(_delta(base, 0.01)))
    await platform.upload(t1, state_to_bytes(_delta(base, 0.03)))
    assert JOB in platform.app.early  # both in: made before the round closes
    first = next(e for e in await platform.model_events() if isinstance(e, UpdateAccepted))
    # the orchestrator's close leaves one out (say, an outlier): the version is made again
    inc = IncludedUpdate(
        shard=first.shard, peer_id="p0", task_id=t0.task_id, key=first.key, sha256=first.sha256
    )
    await platform.job_event(
        RoundClosed(job_id=JOB, round=1, attempt=1, reason="deadline", included=(inc,))
    )
    created = [e for e in await platform.model_events() if isinstance(e, ModelVersionCreated)]
    assert created[-1].version == 1 and created[-1].lineage is not None
    assert created[-1].lineage.peers == ("p0",)
    v1 = load_state(await platform.blobs.get_bytes(created[-1].key))
    assert hashlib.sha256(state_to_bytes(v1)).hexdigest() == created[-1].sha256
    assert all(torch.allclose(v1[k], base[k] + 0.01) for k in base)  # p0's update alone
    assert JOB not in platform.app.early


async def test_an_update_whose_round_closed_while_it_was_checked_is_refused(
    platform: Platform,
):
    t0, t1, base = await two_tasks_open(platform)
    await platform.upload(t1, state_to_bytes(_delta(base, 0.01)))
    [first] = [e for e in await platform.model_events() if isinstance(e, UpdateAccepted)]
    late = await platform.announced(t0, state_to_bytes(_delta(base, 0.01)))
    fetching = asyncio.Event()
    get_stream = platform.blobs.get_stream

    async def slow(key: str):  # type: ignore[no-untyped-def]
        fetching.set()
        await asyncio.sleep(0.05)  # the round closes meanwhile, on its deadline
        async for chunk in get_stream(key):
            yield chunk

    platform.blobs.get_stream = slow  # type: ignore[method-assign]
    handling = asyncio.create_task(platform.app.on_peer(late))
    await fetching.wait()
    inc = IncludedUpdate(
        shard=1, peer_id="p1", task_id=t1.task_id, key=first.key, sha256=first.sha256
    )
    await platform.job_event(
        RoundClosed(job_id=JOB, round=1, attempt=1, reason="deadline", included=(inc,))
    )
    await handling
    platform.blobs.get_stream = get_stream  # type: ignore[method-assign]
    events = await platform.model_events()
    assert [e.peer_id for e in events if isinstance(e, UpdateAccepted)] == ["p1"]
    [rejected] = [e for e in events if isinstance(e, UpdateRejected)]
    assert rejected.task_id == t0.task_id and not rejected.strike  # too late, not a fault
    created = [e for e in events if isinstance(e, ModelVersionCreated)]
    assert created[-1].lineage is not None and created[-1].lineage.peers == ("p1",)


async def test_an_ended_job_is_let_go_of(platform: Platform):
    await platform.configure()
    await platform.job_event(JobCancelled(job_id=JOB, by="u1"))
    assert platform.app.active == set()
    assert platform.app.models.cached(model_stream(JOB)) is None  # forgotten
    assert platform.app.leases.held == []


async def test_a_tick_takes_over_the_jobs_of_a_stopped_instance(tmp_path: Path):
    store, clock = MemoryLeaseStore(), ManualClock()
    first = Platform(tmp_path / "a", leases=Leases(store, "a", ttl_s=10, clock=clock))
    await first.configure()  # instance a holds the job and made v0
    second = Platform(
        tmp_path / "b", leases=Leases(store, "b", ttl_s=10, clock=clock), shared=first
    )
    second.app.active.add(JOB)  # it heard the job configured too
    await second.app.tick()
    assert first.app.leases.holds(JOB) and not second.app.leases.holds(JOB)
    clock.advance(25)  # a stopped renewing: its lease and membership ran out
    await second.app.tick()
    assert second.app.leases.holds(JOB)
    assert len(await first.model_events()) == 2  # v0 made and evaluated once: found done


async def test_a_job_event_after_a_gap_reads_both_streams_on_from_the_log(platform: Platform):
    await platform.configure()
    await platform.job_event(opened())
    await record(platform.log, task(0, "p0"))  # appended, lost on the way here
    await platform.job_event(task(1, "p1"))
    cached = platform.app.models.cached(model_stream(JOB))
    assert cached is not None and cached.state.job_seq == 5  # t0 read on, t1 folded
    assert {t.shard for t in cached.state.tasks.values()} == {0, 1}


class Pair:
    """Two aggregator instances on one log and bucket: every event appended reaches both
    (each has a feed of its own), peers' updates whichever instance a test names."""

    def __init__(self, work_dir: Path) -> None:
        store, self.clock = MemoryLeaseStore(), ManualClock()
        self.first = Platform(work_dir / "a", leases=Leases(store, "a", ttl_s=10, clock=self.clock))
        self.second = Platform(
            work_dir / "b", leases=Leases(store, "b", ttl_s=10, clock=self.clock), shared=self.first
        )
        self.inbox: list[RecordedEvent] = []
        self.first.log.on_append(self.inbox.extend)

    async def settle(self) -> None:
        while self.inbox:
            event = self.inbox.pop(0)
            for p in (self.first, self.second):
                await deliver(AGGREGATOR_SUBSCRIPTIONS, p.app, event)

    async def append(self, data: EventData) -> None:
        await record(self.first.log, data)
        await self.settle()

    def holder(self) -> tuple[Platform, Platform]:
        """The instance holding the job, and the other one."""
        if self.first.app.leases.holds(JOB):
            return self.first, self.second
        assert self.second.app.leases.holds(JOB)
        return self.second, self.first


def _versions_made(path: str) -> float:
    return (
        REGISTRY.get_sample_value("peertrain_aggregator_round_seconds_count", {"path": path}) or 0
    )


async def test_with_two_aggregators_a_round_closes_on_the_holders_running_sum(tmp_path: Path):
    pair = Pair(tmp_path)
    for p in (pair.first, pair.second):
        await p.app.tick()  # both join: the job goes to its preferred instance
    holdout = _holdout()
    await pair.first.blobs.put_bytes(HOLDOUT_KEY, holdout)
    ref = ArtifactRef(key=HOLDOUT_KEY, sha256=hashlib.sha256(holdout).hexdigest(), size=1)
    await pair.append(
        JobCreated(job_id=JOB, owner_id="u1", name="n", dataset_id="d", peers=("p0", "p1"))
    )
    await pair.append(configured().model_copy(update={"holdout": ref}))
    holder, other = pair.holder()
    t0, t1 = task(0, "p0"), task(1, "p1")
    for data in (opened(), t0, t1):
        await pair.append(data)
    # the other instance read the round's base when it opened, before any update came
    assert other.app.bases[JOB][0] == 0
    base = load_state(await holder.blobs.get_bytes(f"models/{JOB}/v0.safetensors"))
    # the holder took the first delivery back to the queue, the other got the second
    await other.upload(t0, state_to_bytes(_delta(base, 0.01)), deliveries=1)
    await holder.upload(t1, state_to_bytes(_delta(base, -0.02)))
    await pair.settle()  # the other's update.accepted reaches the holder's feed
    accepted = [e for e in await holder.model_events() if isinstance(e, UpdateAccepted)]
    assert sorted(a.peer_id for a in accepted) == ["p0", "p1"]
    # the holder's running sum has both: it made the version before the round closed
    assert holder.app.early[JOB].keys == {f"{a.key}#{a.sha256}" for a in accepted}
    assert JOB not in other.app.rounds and JOB not in other.app.early  # only the holder

    early, rebuilt = _versions_made("early"), _versions_made("rebuilt")
    included = tuple(
        IncludedUpdate(
            shard=a.shard, peer_id=a.peer_id, task_id=a.task_id, key=a.key, sha256=a.sha256
        )
        for a in sorted(accepted, key=lambda a: a.shard)
    )
    reads: list[str] = []
    read_stream = pair.first.log.read_stream

    async def counted(stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        reads.append(stream)
        return await read_stream(stream, after_seq=after_seq)

    pair.first.log.read_stream = counted  # type: ignore[method-assign]
    await pair.append(
        RoundClosed(job_id=JOB, round=1, attempt=1, reason="complete", included=included)
    )
    assert reads == []  # the feed brought both update.accepted: nothing read at the close
    pair.first.log.read_stream = read_stream  # type: ignore[method-assign]
    created = [e for e in await holder.model_events() if isinstance(e, ModelVersionCreated)]
    assert [c.version for c in created] == [0, 1]  # made once, by the holder
    assert _versions_made("early") == early + 1 and _versions_made("rebuilt") == rebuilt
    assert created[1].lineage is not None and created[1].lineage.peers == ("p0", "p1")


async def test_with_two_aggregators_an_asynchronous_round_folds_an_earlier_rounds_update(
    tmp_path: Path,
):
    """An asynchronous task outlives its round: its update, checked by the instance that
    does not hold the job after the round closed, goes into the holder's running sum of
    the round open now, and that round's version is made from the running sum, not
    rebuilt from the bucket."""
    pair = Pair(tmp_path)
    for p in (pair.first, pair.second):
        await p.app.tick()
    holdout = _holdout()
    await pair.first.blobs.put_bytes(HOLDOUT_KEY, holdout)
    ref = ArtifactRef(key=HOLDOUT_KEY, sha256=hashlib.sha256(holdout).hexdigest(), size=1)
    peers = ("p0", "p1", "p2")
    await pair.append(JobCreated(job_id=JOB, owner_id="u1", name="n", dataset_id="d", peers=peers))
    block = {"strategy": "fedavg", "mode": "async", "buffer_size": 2, "norm_clip": None}
    cfg = configured(rows=(30, 50, 20), aggregation=block, rounds=3)
    await pair.append(cfg.model_copy(update={"holdout": ref}))
    holder, other = pair.holder()
    t0, t1, t2 = task(0, "p0"), task(1, "p1"), task(2, "p2")
    for data in (opened(), t0, t1, t2):
        await pair.append(data)
    base = load_state(await holder.blobs.get_bytes(f"models/{JOB}/v0.safetensors"))
    await holder.upload(t0, state_to_bytes(_delta(base, 0.01)))
    await holder.upload(t1, state_to_bytes(_delta(base, 0.02)))
    await pair.settle()
    first = [e for e in await holder.model_events() if isinstance(e, UpdateAccepted)]
    await pair.append(buffered_close(1, [(a, 0) for a in first]))
    t3 = task(0, "p0", round_=2)
    for data in (opened(2), t3):
        await pair.append(data)
    # round 1's task, one version stale, handed to the other on its second delivery
    await other.upload(t2, state_to_bytes(_delta(base, -0.03)), deliveries=1)
    await pair.settle()
    late = [e for e in await holder.model_events() if isinstance(e, UpdateAccepted)][-1]
    assert late.task_id == t2.task_id
    assert holder.app.rounds[JOB].round == 2
    summed = holder.app.rounds[JOB].keys()
    assert f"{late.key}#{late.sha256}" in summed  # folded, not left out
    v1 = load_state(await holder.blobs.get_bytes(f"models/{JOB}/v1.safetensors"))
    await holder.upload(t3, state_to_bytes(_delta(v1, 0.04)))
    await pair.settle()
    fresh = [e for e in await holder.model_events() if isinstance(e, UpdateAccepted)][-1]
    assert holder.app.rounds[JOB].keys() == {f"{a.key}#{a.sha256}" for a in (late, fresh)}
    running, rebuilt = _versions_made("running"), _versions_made("rebuilt")
    await pair.append(buffered_close(2, [(late, 0), (fresh, 1)]))
    created = [e for e in await holder.model_events() if isinstance(e, ModelVersionCreated)]
    assert [c.version for c in created] == [0, 1, 2]
    assert _versions_made("running") == running + 1 and _versions_made("rebuilt") == rebuilt


def buffered_close(round_: int, pairs: list[tuple[UpdateAccepted, int]]) -> RoundClosed:
    """An asynchronous round's close on these updates, each with the version its task
    trained from."""
    included = tuple(
        IncludedUpdate(
            shard=a.shard,
            peer_id=a.peer_id,
            task_id=a.task_id,
            key=a.key,
            sha256=a.sha256,
            base_version=base,
        )
        for a, base in pairs
    )
    return RoundClosed(job_id=JOB, round=round_, attempt=1, reason="buffered", included=included)


async def test_an_update_first_delivered_to_an_instance_not_holding_its_job_is_passed_on(
    tmp_path: Path,
):
    """The instances share the queue of updates: the one that does not hold the job
    hands a first delivery back (to reach the holder), and handles a second one."""
    pair = Pair(tmp_path)
    for p in (pair.first, pair.second):
        await p.app.tick()
    await pair.append(
        JobCreated(job_id=JOB, owner_id="u1", name="n", dataset_id="d", peers=("p0", "p1"))
    )
    holdout = _holdout()
    await pair.first.blobs.put_bytes(HOLDOUT_KEY, holdout)
    ref = ArtifactRef(key=HOLDOUT_KEY, sha256=hashlib.sha256(holdout).hexdigest(), size=1)
    await pair.append(configured().model_copy(update={"holdout": ref}))
    holder, other = pair.holder()
    t0, t1 = task(0, "p0"), task(1, "p1")
    for data in (opened(), t0, t1):
        await pair.append(data)
    base = load_state(await holder.blobs.get_bytes(f"models/{JOB}/v0.safetensors"))
    passed = _updates("passed_on")
    with pytest.raises(PassOn):
        await other.upload(t0, state_to_bytes(_delta(base, 0.01)))
    assert _updates("passed_on") == passed + 1
    assert not [e for e in await holder.model_events() if isinstance(e, UpdateAccepted)]
    await holder.upload(t0, state_to_bytes(_delta(base, 0.01)), deliveries=1)  # the holder's
    await other.upload(t1, state_to_bytes(_delta(base, 0.02)), deliveries=1)  # a second one
    await pair.settle()
    accepted = [e for e in await holder.model_events() if isinstance(e, UpdateAccepted)]
    assert sorted(a.peer_id for a in accepted) == ["p0", "p1"]
    assert _updates("passed_on") == passed + 1


def _updates(outcome: str) -> float:
    sample = REGISTRY.get_sample_value(
        "peertrain_aggregator_updates_total", {"outcome": outcome, "code": ""}
    )
    return sample or 0.0
