"""What every orchestrator use case works with: jobs in memory, the directory, one lock.

State lives in memory and is rebuilt from the log at start-up; every change goes
through an event appended to the job's stream. One lock serialises decisions (and lease
renewal, on the tick), so handlers on different queues never race each other. A user's
read of a job never takes it (``projections.read_on``): a read slowed down by the store
must not delay a renewal, or the job would move to another instance. Every instance
folds every job; only the holder of a job's lease (:attr:`OrchestratorContext.leases`)
decides on its own (deadlines, rounds), while any instance records what a user or peer
asks of a job (the stream's expected version settles who appended first).

The aggregate repository keeps its jobs in the orchestrator's own dict
(:class:`JobsCache`), so an append, or a conflict's catch-up, changes the job the rest
of the service sees. Facts from other services' streams (model, sharding) are folded
into the same objects as they arrive from the bus.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from peertrain.common.app import ServiceContext
from peertrain.common.blobs import BlobStore
from peertrain.common.eventlog import Cached, EventLog, Fold, Repository
from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import sharding_stream
from peertrain.common.events.models import model_stream
from peertrain.common.leases import Holding, leases_for

from ..config import OrchestratorSettings
from ..domain import Directory, Job

__all__ = ["JOB_FOLD", "PRODUCER", "JobsCache", "OrchestratorContext"]

PRODUCER = "orchestrator"


def _job_id(stream: str) -> str:
    return stream.partition(":")[2]


def _apply(job: Job, event: RecordedEvent) -> Job:
    job.apply(event)
    return job


def _folded(job: Job, source: str) -> int | None:
    if source.startswith("model:"):
        return job.model_seq
    # the sharding stream's outcome is all a job keeps of it
    return None if job.sharded is not None or job.sharding_failed is not None else 0


JOB_FOLD: Fold[Job] = Fold(
    initial=lambda stream: Job(_job_id(stream)),
    apply=_apply,
    streams=lambda stream: (
        stream,
        model_stream(_job_id(stream)),
        sharding_stream(_job_id(stream)),
    ),
    folded=_folded,
)
"""A ``job:<id>`` stream folded into its :class:`Job`, with the job's model and sharding
streams (read on together, in log order: see ``Fold.folded``)."""


class JobsCache:
    """The orchestrator's jobs by id, seen by the repository as states by stream.

    Jobs are never dropped from here (users list them): an entry the repository stops
    trusting is marked stale instead, and read on at the next load.
    """

    def __init__(self, jobs: dict[str, Job]) -> None:
        self.jobs = jobs
        self._stale: set[str] = set()

    def get(self, stream: str) -> Cached[Job] | None:
        """The job, at the version of its own stream, if the orchestrator has it."""
        job = self.jobs.get(_job_id(stream))
        return None if job is None else Cached(job, job.version, stale=stream in self._stale)

    def put(self, stream: str, entry: Cached[Job]) -> None:
        """Keep the job (the same object, unless it was read for the first time)."""
        if entry.stale:
            self._stale.add(stream)
        else:
            self._stale.discard(stream)
        self.jobs[_job_id(stream)] = entry.state

    def discard(self, stream: str) -> None:
        """Mark the job stale (it stays listed)."""
        self._stale.add(stream)


@dataclass
class OrchestratorContext:
    """The service's resources and its working memory (all rebuildable from the log)."""

    ctx: ServiceContext
    settings: OrchestratorSettings
    directory: Directory = field(default_factory=Directory)
    """Peers and datasets, as folded from their events."""
    jobs: dict[str, Job] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Serialises every decision, lease renewal and read of a job that leads to a send;
    never taken by a user's read (see ``projections.read_on``)."""
    ready: bool = False
    """The log was replayed (routes answer 503 before)."""
    dispatching: dict[str, asyncio.Task[bool]] = field(default_factory=dict)
    """``task.assigned`` event id -> its in-process dispatch (see ``dispatch_soon``)."""
    folded: asyncio.Condition = field(default_factory=asyncio.Condition)
    """Notified whenever the feed folded an event into a job (see :meth:`folded_to`)."""
    repository: Repository[Job] = field(init=False)
    """Job streams: load, decide, append, with :attr:`jobs` as the cache."""
    leases: Holding = field(init=False)
    """The jobs this instance works on (every instance reads them all)."""

    def __post_init__(self) -> None:
        self.repository = Repository(
            self.ctx.log, JOB_FOLD, producer=PRODUCER, cache=JobsCache(self.jobs)
        )
        settings = self.settings
        self.leases = leases_for(self.ctx.db, settings)

    async def folded_to(self, job_id: str, seq: int, *, timeout_s: float) -> bool:
        """Wait (without :attr:`lock`) until the job has folded its stream up to ``seq``,
        at most ``timeout_s``; whether it has.

        An event another instance appended reaches this one twice: on the feed, which
        folds it, and on a work queue (dispatch). Waiting a moment for the feed spares
        the work queue's handler a read of the job's streams. A job whose creation this
        instance never heard of (another deployment's, on a shared broker) is not
        waited for: its feed would not fold it.
        """
        known = self.jobs.get(job_id)
        if known is None or known.created is None:
            return False

        def reached() -> bool:
            job = self.jobs.get(job_id)
            return job is not None and job.version >= seq

        if reached():
            return True
        async with self.folded:
            try:
                await asyncio.wait_for(self.folded.wait_for(reached), timeout_s)
            except TimeoutError:
                return False
        return True

    @property
    def log(self) -> EventLog:
        """The shared event log."""
        return self.ctx.log

    @property
    def blobs(self) -> BlobStore:
        """The bucket (configured for this service)."""
        assert self.ctx.blobs is not None
        return self.ctx.blobs
