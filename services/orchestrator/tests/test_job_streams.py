"""Job streams through the repository (the service's jobs as its cache), and peer reports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from peertrain.common.app import Ports
from peertrain.common.eventlog import MemoryEventLog, Repository
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.models import ModelVersionCreated
from peertrain.common.events.tasks import (
    EpochReport,
    TaskAcceptedBody,
    TaskFailedBody,
    TaskProgressBody,
)
from peertrain.common.events.training import (
    JobCancelled,
    JobCreated,
    RoundOpened,
    ShardingSpec,
    TaskAccepted,
    TaskAssigned,
    TaskFailed,
    TaskProgress,
)
from peertrain.orchestrator.application import OrchestratorApp
from peertrain.orchestrator.domain import Job
from peertrain.orchestrator.domain.reports import decide_report, decide_reports

SHA = "0" * 64
LATER = datetime.now(UTC) + timedelta(hours=1)
CREATED = JobCreated(
    job_id="j1",
    owner_id="u1",
    name="test",
    dataset_id="d1",
    peers=("p0", "p1"),
    sharding=ShardingSpec(),
    model={"arch": "logreg"},
    training={"rounds": 2},
    aggregation={},
)
OPENED = RoundOpened(
    job_id="j1",
    round=1,
    attempt=1,
    model_version=0,
    model_key="m",
    model_sha256=SHA,
    deadline=LATER,
)
ASSIGNED = TaskAssigned(
    job_id="j1",
    task_id="t0",
    round=1,
    attempt=1,
    shard=0,
    peer_id="p0",
    update_key="u",
    deadline=LATER,
)


class Log(MemoryEventLog):
    """The event log in memory, recording which streams were read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        self.reads.append(stream)
        return await super().read_stream(stream, after_seq=after_seq)

    async def write(self, stream: str, *data: EventData) -> list[RecordedEvent]:
        """Append ``data`` at the end of ``stream`` (this instance or another)."""
        new = [NewEvent.of(d, producer="orchestrator") for d in data]
        return await self.append(stream, new, expected_version=await self.stream_version(stream))


async def running() -> tuple[Log, dict[str, Job], Repository[Job]]:
    """The orchestrator's jobs and its repository over them, j1 folded as it ran."""
    log = Log()
    app = OrchestratorApp(Ports(log=log))
    job = app.jobs["j1"] = Job("j1")
    for event in await log.write("job:j1", CREATED, OPENED, ASSIGNED):
        job.apply(event)
    return log, app.jobs, app.repository


def cancel_unless_ended(job: Job) -> list[EventData]:
    return [] if job.terminal else [JobCancelled(job_id="j1", by="u1")]


async def test_an_append_changes_the_very_job_the_service_holds() -> None:
    log, jobs, repo = await running()
    job = jobs["j1"]
    saved = await repo.execute("job:j1", cancel_unless_ended)
    assert saved.state is job and jobs["j1"] is job
    assert (job.version, job.terminal) == (4, "cancelled") and log.reads == []


async def test_a_stream_moved_by_another_writer_is_caught_up_and_decided_again() -> None:
    log, jobs, repo = await running()
    await log.write("job:j1", JobCancelled(job_id="j1", by="admin"))  # another instance
    saved = await repo.execute("job:j1", cancel_unless_ended)
    assert saved.events == () and jobs["j1"].terminal == "cancelled"
    assert len(log.streams["job:j1"]) == 4 and jobs["j1"].version == 4


async def test_a_job_read_for_the_first_time_folds_its_model_and_sharding_streams() -> None:
    log, _, _ = await running()
    version = ModelVersionCreated(
        job_id="j1", version=0, key="m", sha256=SHA, size=1, strategy="fedavg"
    )
    await log.write("model:j1", version)
    fresh = OrchestratorApp(Ports(log=log))
    jobs, repo = fresh.jobs, fresh.repository
    loaded = await repo.load("job:j1")
    assert loaded.version == 3 and 0 in loaded.state.versions and jobs["j1"] is loaded.state
    assert log.reads == ["job:j1", "model:j1", "sharding:j1"]


async def test_reports_are_recorded_only_from_the_tasks_peer_and_only_as_news() -> None:
    _, jobs, _ = await running()
    job = jobs["j1"]
    ref = {"task_id": "t0", "job_id": "j1", "round": 1, "attempt": 1, "shard": 0}
    accepted = TaskAcceptedBody(**ref, device="cpu")
    [event] = decide_report(job, "p0", accepted)
    assert isinstance(event, TaskAccepted) and event.device == "cpu"
    assert decide_report(job, "p1", accepted) == []  # not the sender's task
    assert decide_report(job, "p0", TaskAcceptedBody(**(ref | {"shard": 1}))) == []
    progress = TaskProgressBody(
        **ref, epoch=1, epochs=1, loss=0.5, accuracy=None, samples=10, duration_s=0.1
    )
    assert isinstance(decide_report(job, "p0", progress)[0], TaskProgress)
    # at most once per epoch of the job's own count: no flood of progress events
    beyond = progress.model_copy(update={"epoch": 2, "epochs": 2})
    assert decide_report(job, "p0", beyond) == []
    job.find_task("t0").epochs_reported.add(1)  # type: ignore[union-attr]
    assert decide_report(job, "p0", progress) == []
    failed = TaskFailedBody(**ref, error="boom")
    assert isinstance(decide_report(job, "p0", failed)[0], TaskFailed)
    job.find_task("t0").state = "failed"  # type: ignore[union-attr]
    assert decide_report(job, "p0", failed) == [] and decide_report(job, "p0", accepted) == []
    job.terminal = "cancelled"
    assert decide_report(job, "p0", progress) == []


async def test_reports_recorded_together_are_each_decided_after_the_ones_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, jobs, _ = await running()
    job = jobs["j1"]
    ref = {"task_id": "t0", "job_id": "j1", "round": 1, "attempt": 1, "shard": 0}
    accepted = TaskAcceptedBody(**ref, device="cpu")
    progress = TaskProgressBody(
        **ref, epoch=1, epochs=1, loss=0.5, accuracy=None, samples=10, duration_s=0.1
    )
    failed = TaskFailedBody(**ref, error="boom")
    # an accepted report said twice, an epoch twice: each recorded once, in order
    decided = decide_reports(
        job, [("p0", accepted), ("p0", progress), ("p0", accepted), ("p0", progress)]
    )
    assert [(peer, type(e)) for peer, e in decided] == [
        ("p0", TaskAccepted),
        ("p0", TaskProgress),
    ]
    # taken in the order the peer sends them (progress, then its failure); after the
    # failure the task is no longer open: a second failure is no news
    decided = decide_reports(job, [("p0", failed), ("p0", progress), ("p0", failed)])
    assert [type(e) for _, e in decided] == [TaskProgress, TaskFailed]
    # a task whose update came before its report: which device trained it is still news
    task = job.find_task("t0")
    assert task is not None
    task.state = "updated"
    late = decide_reports(job, [("p0", accepted), ("p0", progress), ("p0", accepted)])
    assert [type(e) for _, e in late] == [TaskAccepted, TaskProgress]  # and its epoch
    job.terminal = "completed"  # even once its job is over (it was its last round)
    assert [type(e) for _, e in decide_reports(job, [("p0", progress)])] == [TaskProgress]
    assert decide_reports(job, [("p0", failed)]) == []
    task.device, task.epochs_reported = "cpu", {1}
    assert decide_reports(job, [("p0", accepted), ("p0", progress)]) == []
    job.terminal, task.epochs_reported = None, set()
    task.state, task.device = "assigned", None
    # the bus may hand a task's reports over in another order than its peer sent them:
    # each epoch is recorded once, in order within a batch, a late earlier one after
    monkeypatch.setattr(type(job), "local_epochs", property(lambda _: 2))  # a job of 2
    second = progress.model_copy(update={"epoch": 2, "epochs": 2})
    first_ = progress.model_copy(update={"epochs": 2})
    decided = decide_reports(job, [("p0", second), ("p0", failed), ("p0", first_)])
    assert [(type(e), getattr(e, "epoch", None)) for _, e in decided] == [
        (TaskProgress, 1),
        (TaskProgress, 2),
        (TaskFailed, None),
    ]
    task.epochs_reported = {2}
    assert [getattr(e, "epoch", None) for _, e in decide_reports(job, [("p0", first_)])] == [1]
    task.epochs_reported = set()
    monkeypatch.undo()
    # each report is checked against its own sender
    assert decide_reports(job, [("p1", accepted), ("p0", accepted)]) == [
        ("p0", decide_report(job, "p0", accepted)[0])
    ]


async def test_a_report_of_several_epochs_records_each_new_one_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A peer reports its fast epochs together: the event keeps the report's earlier
    epochs that are news (not recorded, not repeated, below its latest, in order), and
    the job folds it into one entry per epoch."""
    log, jobs, _ = await running()
    job = jobs["j1"]
    monkeypatch.setattr(type(job), "local_epochs", property(lambda _: 4))
    ref = {"task_id": "t0", "job_id": "j1", "round": 1, "attempt": 1, "shard": 0}

    def epoch(e: int) -> EpochReport:
        return EpochReport(epoch=e, loss=1.0 / e, accuracy=0.5, samples=10, duration_s=0.1)

    def report(latest: int, *earlier: int) -> TaskProgressBody:
        return TaskProgressBody(
            **ref, **epoch(latest).model_dump(), epochs=4, earlier=tuple(map(epoch, earlier))
        )

    [event] = decide_report(job, "p0", report(3, 1, 2))
    assert isinstance(event, TaskProgress) and [e.epoch for e in event.earlier] == [1, 2]
    job.find_task("t0").epochs_reported.add(1)  # type: ignore[union-attr]
    # recorded, repeated, out of order, not below the latest: left out
    [event] = decide_report(job, "p0", report(3, 1, 2, 2, 5, 3))
    assert isinstance(event, TaskProgress) and [e.epoch for e in event.earlier] == [2]
    [event] = decide_report(job, "p0", report(3, 2, 1))
    assert isinstance(event, TaskProgress) and [e.epoch for e in event.earlier] == [2]
    # in one batch (taken by their latest epochs), each epoch once
    decided = decide_reports(job, [("p0", report(4, 2, 3)), ("p0", report(3, 2))])
    assert [[*(x.epoch for x in e.earlier), e.epoch] for _, e in decided] == [[2, 3], [4]]
    job.find_task("t0").epochs_reported = set()  # type: ignore[union-attr]
    for recorded in await log.write("job:j1", decide_report(job, "p0", report(4, 1, 2, 3))[0]):
        job.apply(recorded)
    assert [(p.epoch, p.loss, p.earlier) for p in job.progress] == [
        (e, 1.0 / e, ()) for e in (1, 2, 3, 4)
    ]
    assert job.find_task("t0").epochs_reported == {1, 2, 3, 4}  # type: ignore[union-attr]
    assert decide_report(job, "p0", report(4, 1, 2, 3)) == []
