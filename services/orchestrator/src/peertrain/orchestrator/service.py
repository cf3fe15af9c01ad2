"""The orchestrator's shell: folds facts into jobs, appends decisions, talks to peers.

State lives in memory and is rebuilt from the log at start-up (:meth:`Orchestrator.
replay`); every change goes through an event appended to the job's stream. Decisions
come from :func:`~peertrain.orchestrator.domain.reconcile`, run after every fact and on
a timer (deadlines). One lock serialises decisions, so handlers on different queues
never race each other.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from peertrain.common.app import ServiceContext
from peertrain.common.blobs import BlobStore
from peertrain.common.bus import PEERS
from peertrain.common.eventlog import Repository, Saved
from peertrain.common.events import EventData, RecordedEvent
from peertrain.common.events.datasets import (
    DATASET_DELETED,
    DATASET_REJECTED,
    DATASET_SHARDED,
    DATASET_SHARDING_FAILED,
    DATASET_UPLOADED,
    DATASET_VALIDATED,
    sharding_stream,
)
from peertrain.common.events.jobs import job_stream
from peertrain.common.events.models import MODEL_EVENT_TYPES, UpdateAccepted, model_stream
from peertrain.common.events.peers import PEER_EVENT_TYPES
from peertrain.common.events.tasks import (
    CancelMessage,
    Download,
    TaskMessage,
    UploadForm,
    peer_message_key,
)
from peertrain.common.events.training import (
    JOB_EVENT_TYPES,
    JobCancelled,
    JobConfigured,
    RoundClosed,
    RoundFailed,
    ShardPlan,
    TaskAssigned,
)
from peertrain.common.ids import new_id
from peertrain.common.security import PeerMessage, Principal
from peertrain.common.specs import (
    count_parameters,
    derive_seed,
    parse_aggregation_spec,
    parse_feature_spec,
)
from peertrain.common.specs import parse_model_spec as _model

from .config import OrchestratorSettings
from .domain import Directory, Env, Job, reconcile
from .domain.errors import JobNotFound, JobStateConflict
from .domain.reports import decide_report
from .domain.request import JobRequest, check_running_quota, plan_job
from .metrics import JOBS, JOBS_FINISHED, ROUND_DURATION, ROUND_PEERS, ROUNDS_CLOSED, TASKS
from .metrics import TASKS_DISPATCHED as DISPATCHED
from .streams import JOB_FOLD, JobsCache

__all__ = ["FACT_TYPES", "PRODUCER", "Orchestrator"]

log = structlog.get_logger(__name__)

PRODUCER = "orchestrator"
DATASET_TYPES = (DATASET_UPLOADED, DATASET_VALIDATED, DATASET_REJECTED, DATASET_DELETED)
FACT_TYPES: tuple[str, ...] = (
    *PEER_EVENT_TYPES,
    *DATASET_TYPES,
    DATASET_SHARDED,
    DATASET_SHARDING_FAILED,
    *MODEL_EVENT_TYPES,
)
"""What other services append that the orchestrator acts on."""
MAX_STEPS = 20

DecideJob = Callable[[Job], Sequence[EventData]]


MAX_DISPATCHING = 10_000
"""In-process dispatches remembered until the bus brings their ``task.assigned``."""


def _job_id_of(event: RecordedEvent) -> str | None:
    kind, _, rest = event.stream.partition(":")
    return rest if kind in ("job", "model", "sharding") else None


def _now() -> datetime:
    return datetime.now(UTC)


def _reconciled(env: Env) -> DecideJob:
    return lambda job: reconcile(job, env)


def _configured_once(configured: JobConfigured) -> DecideJob:
    return lambda job: [configured] if job.configured is None and job.terminal is None else []


class Orchestrator:
    """Jobs in memory, advanced by facts and the clock, persisted as events."""

    def __init__(self, ctx: ServiceContext, settings: OrchestratorSettings) -> None:
        self.ctx = ctx
        self.settings = settings
        self.directory = Directory()
        self.jobs: dict[str, Job] = {}
        self.repository: Repository[Job] = Repository(
            ctx.log, JOB_FOLD, producer=PRODUCER, cache=JobsCache(self.jobs)
        )
        self.lock = asyncio.Lock()
        self.ready = False
        # task.assigned event id -> its in-process dispatch (see _dispatch_soon)
        self._dispatching: dict[str, asyncio.Task[bool]] = {}

    @property
    def blobs(self) -> BlobStore:
        """The bucket (configured for this service)."""
        assert self.ctx.blobs is not None
        return self.ctx.blobs

    # -- start-up --------------------------------------------------------------------

    async def replay(self) -> None:
        """Rebuild the projections and every job from the log, then catch up on them."""
        types = (*FACT_TYPES, *JOB_EVENT_TYPES)
        count = 0
        async with self.lock:
            async for event in self.ctx.log.read_all(types=types):
                self._fold(event)
                count += 1
            for job in self.jobs.values():
                if job.terminal is None:
                    await self._advance(job)
            self._gauge()
        self.ready = True
        log.info("replayed the log", events=count, jobs=len(self.jobs))

    def _fold(self, event: RecordedEvent) -> Job | None:
        """Fold ``event`` in; the job it concerns, whether or not it was new to it.

        A redelivered fact was folded the first time, but what it should have caused may
        not have been appended (the store blinked): the caller decides again either way,
        and deciding is idempotent.
        """
        if self.directory.apply(event):
            return None
        job_id = _job_id_of(event)
        if job_id is None:
            return None
        job = self.jobs.get(job_id)
        if job is None:
            if not event.stream.startswith("job:"):
                return None  # facts of jobs created elsewhere (tests sharing a log)
            job = self.jobs[job_id] = Job(job_id)
        if job.apply(event) and isinstance(event.data, UpdateAccepted):
            self._measure(job, event.data, event.occurred_at)
        return job

    def _measure(self, job: Job, accepted: UpdateAccepted, at: datetime) -> None:
        """The peer's training speed, as the platform saw it (see ``PeerInfo.observe``)."""
        task = job.find_task(accepted.task_id)
        peer = self.directory.peers.get(accepted.peer_id)
        plan = job.configured and next(
            (s for s in job.configured.shards if s.index == accepted.shard), None
        )
        if task is not None and peer is not None and plan:
            peer.observe(plan.rows, (at - task.assigned_at).total_seconds())

    # -- facts -------------------------------------------------------------------------

    async def on_fact(self, event: RecordedEvent) -> None:
        """Another service's event: fold it and advance what it concerns."""
        async with self.lock:
            if self.directory.apply(event):
                if event.stream.startswith("peer:"):
                    peer_id = event.stream.partition(":")[2]
                    for job in self._running_with(peer_id):
                        await self._advance(job)
                return
            touched = self._fold(event)
            if touched is not None and touched.terminal is None:
                await self._advance(touched)

    def _running_with(self, peer_id: str) -> list[Job]:
        return [
            j
            for j in self.jobs.values()
            if j.terminal is None and j.created is not None and peer_id in j.created.peers
        ]

    async def tick(self) -> None:
        """Deadlines, and anything a failed append left undecided: advance every job
        that has not ended (deciding is pure and idempotent; most jobs decide nothing)."""
        async with self.lock:
            for job in list(self.jobs.values()):
                if job.terminal is None and job.created is not None:
                    try:
                        await self._advance(job)
                    except Exception as exc:  # one job's trouble must not starve the rest
                        log.warning("advancing a job failed", job_id=job.job_id, error=repr(exc))
            self._gauge()

    # -- deciding ----------------------------------------------------------------------

    async def _advance(self, job: Job) -> None:
        for _ in range(MAX_STEPS):
            if job.terminal is None and job.sharded is not None and job.configured is None:
                saved = await self._execute(job, _configured_once(await self._configure(job)))
                job = saved.state
                continue
            env = Env(
                now=_now(),
                online=frozenset(self.directory.online_peers()),
                max_attempts=self.settings.max_round_attempts,
            )
            saved = await self._execute(job, _reconciled(env))
            if not saved.events:
                return
            job = saved.state
        log.warning("job did not settle", job_id=job.job_id)

    async def _execute(
        self, job: Job, decide: DecideJob, *, actor: str | None = None, retries: int | None = None
    ) -> Saved[Job]:
        """Decide on the job and append to its stream (deciding again on the caught-up
        job if the stream moved under us)."""
        saved = await self.repository.execute(
            job_stream(job.job_id),
            decide,
            retries=retries,
            actor=actor,
            correlation_id=job.job_id,
        )
        for event in saved.events:
            self._observe(saved.state, event)
            if isinstance(event.data, TaskAssigned):
                self._dispatch_soon(event)
        return saved

    def _observe(self, job: Job, event: RecordedEvent) -> None:
        kind = event.type
        if kind.startswith("task."):
            TASKS.labels(kind=kind.partition(".")[2]).inc()
        elif isinstance(event.data, RoundClosed | RoundFailed):
            rnd = job.rounds.get((event.data.round, event.data.attempt))
            outcome = "closed" if kind == "round.closed" else "failed"
            ROUNDS_CLOSED.labels(outcome=outcome, reason=rnd.close_reason if rnd else "").inc()
            if rnd is not None and rnd.closed_at is not None:
                ROUND_DURATION.observe((rnd.closed_at - rnd.opened_at).total_seconds())
                if outcome == "closed":
                    ROUND_PEERS.observe(len(rnd.accepted))
        elif kind in ("job.completed", "job.failed", "job.cancelled"):
            JOBS_FINISHED.labels(state=kind.partition(".")[2]).inc()
        log.info("job event", job_id=job.job_id, type=kind, seq=event.seq)

    def _gauge(self) -> None:
        counts: dict[str, int] = dict.fromkeys(
            ("sharding", "running", "completed", "failed", "cancelled"), 0
        )
        for job in self.jobs.values():
            counts[job.state] += 1
        for state, n in counts.items():
            JOBS.labels(state=state).set(n)

    async def _configure(self, job: Job) -> JobConfigured:
        """Write ``config.json`` for a sharded job and describe it as ``job.configured``."""
        assert job.created is not None and job.sharded is not None
        created, sharded = job.created, job.sharded
        shards = tuple(
            ShardPlan(
                index=s.index,
                peer_id=s.peer_id,
                key=s.key,
                sha256=s.sha256,
                size=s.size,
                rows=max(1, s.rows or 0),
            )
            for s in sorted(sharded.shards, key=lambda s: s.index)
        )
        rounds = int(created.training.get("rounds", 10))
        config: dict[str, Any] = {
            "job_id": job.job_id,
            "name": created.name,
            "owner_id": created.owner_id,
            "dataset_id": created.dataset_id,
            "bucket": self.blobs.bucket,
            "rounds": rounds,
            "model": created.model,
            "training": created.training,
            "aggregation": created.aggregation,
            "sharding": created.sharding.model_dump(mode="json"),
            "feature_spec": sharded.feature_spec.model_dump(mode="json"),
            "exchanges": {"tasks": PEERS.name, "telemetry": "peertrain.telemetry"},
            "peers": [
                {
                    "peer_id": p,
                    "queue": f"peer.{p}",
                    "task_routing_key": peer_message_key(p, "task"),
                }
                for p in created.peers
            ],
            "shards": [
                {**s.model_dump(mode="json"), "url": f"s3://{self.blobs.bucket}/{s.key}"}
                for s in shards
            ],
            "holdout": sharded.holdout.model_dump(mode="json"),
        }
        data = json.dumps(config, indent=2, sort_keys=True).encode()
        key = f"jobs/{job.job_id}/config.json"
        await self.blobs.put_bytes(key, data, content_type="application/json")
        return JobConfigured(
            job_id=job.job_id,
            config_key=key,
            config_sha256=hashlib.sha256(data).hexdigest(),
            rounds=rounds,
            model=created.model,
            training=created.training,
            aggregation=created.aggregation,
            feature_spec=sharded.feature_spec,
            shards=shards,
            holdout=sharded.holdout,
            reference_weight=float(sum(s.rows for s in shards)),
        )

    # -- users -------------------------------------------------------------------------

    def get(self, job_id: str, who: Principal) -> Job:
        """A job the caller may see (its owner, or an admin)."""
        job = self.jobs.get(job_id)
        if job is None or job.created is None or not (who.is_admin or job.owner_id == who.subject):
            raise JobNotFound(f"no job {job_id!r}")
        return job

    def visible(self, who: Principal) -> list[Job]:
        """The caller's jobs (all of them for an admin), newest first."""
        jobs = [
            j
            for j in self.jobs.values()
            if j.created is not None and (who.is_admin or j.owner_id == who.subject)
        ]
        return sorted(jobs, key=lambda j: j.created_at or _now(), reverse=True)

    async def create(self, request: JobRequest, who: Principal) -> Job:
        """Check and create a job (``job.created``); sharding starts from that event."""
        async with self.lock:
            check_running_quota(self.jobs.values(), who, self.settings.max_running_jobs)
            job_id = new_id()
            created = plan_job(job_id, request, who, self.directory)
            job = Job(job_id)
            self.jobs[job_id] = job
            try:
                await self._execute(job, lambda _: [created], actor=who.subject, retries=0)
            except Exception:
                self.jobs.pop(job_id, None)
                raise
            self._gauge()
            return job

    async def cancel(self, job_id: str, who: Principal) -> Job:
        """Cancel a running job; its peers are told to stop."""
        async with self.lock:
            job = self.get(job_id, who)

            def decide(current: Job) -> list[EventData]:
                if current.terminal is not None:
                    raise JobStateConflict(
                        f"job {job_id!r} is already {current.terminal}",
                        detail={"state": current.terminal},
                    )
                return [JobCancelled(job_id=job_id, by=who.subject)]

            job = (await self._execute(job, decide, actor=who.subject)).state
            self._gauge()
            return job

    # -- peers -------------------------------------------------------------------------

    async def on_peer_message(self, message: PeerMessage[Any]) -> None:
        """``accepted`` / ``progress`` / ``failed`` from a peer: recorded if the task is its."""
        body = message.body
        async with self.lock:
            job = self.jobs.get(body.job_id)
            task = job.find_task(body.task_id) if job is not None else None
            if job is None or task is None or task.peer_id != message.peer_id:
                log.warning(
                    "ignoring a message about a task that is not the sender's",
                    peer_id=message.peer_id,
                    task_id=body.task_id,
                    kind=message.kind,
                )
                return
            saved = await self._execute(
                job, lambda j: decide_report(j, message.peer_id, body), actor=message.peer_id
            )
            await self._advance(saved.state)  # also after a redelivery: see _fold

    def _dispatch_soon(self, event: RecordedEvent) -> None:
        """Send a task this process just assigned without waiting for the bus to bring
        ``task.assigned`` back (one relay and one consumer hop less per round). The bus
        delivery still comes: :meth:`dispatch` then only checks that this send worked,
        and sends itself after a failure or a restart (at least once, as before)."""
        if len(self._dispatching) > MAX_DISPATCHING:  # bus deliveries lost: forget the oldest
            for stale in list(self._dispatching)[: len(self._dispatching) // 2]:
                self._dispatching.pop(stale)
        self._dispatching[event.id] = asyncio.create_task(self._dispatch_task(event))

    async def _dispatch_task(self, event: RecordedEvent) -> bool:
        assert isinstance(event.data, TaskAssigned)
        try:
            message = await self._task_message(event.data)
            if message is not None:
                await self._send(
                    event.data.peer_id, "task", message.model_dump_json(), event.data.task_id
                )
        except Exception as exc:  # the bus delivery will try again
            log.warning("sending a task failed; the bus will retry", error=repr(exc))
            return False
        return True

    async def dispatch(self, event: RecordedEvent) -> None:
        """``task.assigned`` -> the task message; ``job.cancelled`` -> cancel messages."""
        data = event.data
        if isinstance(data, TaskAssigned):
            sent = self._dispatching.pop(event.id, None)
            if sent is not None and await sent:
                return
            message = await self._task_message(data)
            if message is None:
                return
            await self._send(data.peer_id, "task", message.model_dump_json(), data.task_id)
        elif isinstance(data, JobCancelled):
            job = self.jobs.get(data.job_id)
            if job is None or job.created is None:
                return
            peers = set(job.created.peers)
            if job.current is not None:
                peers |= {t.peer_id for t in job.current.tasks.values()}
            body = CancelMessage(job_id=data.job_id).model_dump_json()
            for peer_id in sorted(peers):
                await self._send(peer_id, "cancel", body, f"{event.id}.{peer_id}")

    async def _send(self, peer_id: str, kind: str, body: str, message_id: str) -> None:
        await self.ctx.broker.publish(
            body,
            exchange=PEERS,
            routing_key=peer_message_key(peer_id, kind),
            persist=True,
            mandatory=True,
            message_id=message_id,
            content_type="application/json",
            timeout=30,
        )
        DISPATCHED.labels(kind=kind).inc()

    async def _task_message(self, assigned: TaskAssigned) -> TaskMessage | None:
        async with self.lock:
            job = self.jobs.get(assigned.job_id)
            task = job.find_task(assigned.task_id) if job is not None else None
            if job is None or task is None or job.terminal is not None or not task.open:
                return None  # nothing to do any more (ended, lost, already answered)
            rnd = job.rounds.get((task.round, task.attempt))
            conf = job.configured
            version = job.versions.get(rnd.model_version) if rnd else None
            if rnd is None or rnd.state != "open" or conf is None or version is None:
                return None
            plan = next(s for s in conf.shards if s.index == task.shard)
        remaining = (task.deadline - _now()).total_seconds()
        expires = int(max(60.0, remaining) + self.settings.presign_slack_s)
        expires = min(expires, 7 * 24 * 3600)
        spec = _model(conf.model)
        features = parse_feature_spec(conf.feature_spec.model_dump(mode="json"))
        max_bytes = count_parameters(spec, features) * 4 + self.settings.update_overhead_bytes
        form = await self.blobs.presigned_post(
            task.update_key, max_bytes=max_bytes, expires_s=expires
        )
        return TaskMessage(
            task_id=task.task_id,
            job_id=job.job_id,
            round=task.round,
            attempt=task.attempt,
            shard=task.shard,
            deadline=task.deadline,
            model_version=rnd.model_version,
            model=Download(
                url=await self.blobs.presigned_get(rnd.model_key, expires_s=expires),
                sha256=rnd.model_sha256,
                size=version.size,
                key=rnd.model_key,
            ),
            data=Download(
                url=await self.blobs.presigned_get(plan.key, expires_s=expires),
                sha256=plan.sha256,
                size=plan.size,
                key=plan.key,
            ),
            upload=UploadForm(
                url=form["url"],
                fields=dict(form["fields"]),
                key=task.update_key,
                max_bytes=max_bytes,
            ),
            model_spec=conf.model,
            feature_spec=conf.feature_spec.model_dump(mode="json"),
            training=parse_aggregation_spec(conf.aggregation).configure_train(conf.training),
            seed=derive_seed(int(conf.training.get("seed", 0)), task.round, task.shard),
        )

    # -- reading the log -----------------------------------------------------------------

    async def events(self, job: Job) -> list[RecordedEvent]:
        """The job's lineage: its own, sharding and model events, in log order."""
        found: list[RecordedEvent] = []
        for stream in (
            job_stream(job.job_id),
            sharding_stream(job.job_id),
            model_stream(job.job_id),
        ):
            found += await self.ctx.log.read_stream(stream)
        return sorted(found, key=lambda e: e.position)
