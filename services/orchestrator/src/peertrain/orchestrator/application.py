"""The orchestrator's application: its ports, its working memory, and what drives it.

State lives in memory and is rebuilt from the log at start-up; every change goes
through an event appended to the job's stream. One lock serialises decisions (and lease
renewal, on the tick), so handlers on different queues never race each other. A user's
read of a job never takes it (:func:`~.usecases.catchup.read_on`): a read slowed down
by the store must not delay a renewal, or the job would move to another instance. Every
instance folds every job; only the holder of a job's lease (:attr:`OrchestratorApp.leases`)
decides on its own (deadlines, rounds), while any instance records what a user or peer
asks of a job (the stream's expected version settles who appended first).

The platform (``app.py``), the simulation and the unit tests drive the same object:
:data:`ORCHESTRATOR_SUBSCRIPTIONS` says which events reach which method, and
:meth:`OrchestratorApp.tick` runs on a timer (or on a virtual clock).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from peertrain.common.app import On, Ports, Publisher, Table
from peertrain.common.blobs import BlobPort
from peertrain.common.clock import Clock
from peertrain.common.eventlog import LogPort, Repository
from peertrain.common.events import RecordedEvent
from peertrain.common.events.tasks import (
    ACCEPTED,
    FAILED,
    PROGRESS,
    TaskAcceptedBody,
    TaskFailedBody,
    TaskProgressBody,
)
from peertrain.common.events.training import (
    JOB_CANCELLED,
    JOB_EVENT_TYPES,
    TASK_ASSIGNED,
    TASK_LOST,
    JobCreated,
)
from peertrain.common.leases import Holding, SoleInstance, pass_on_to_holder
from peertrain.common.security import PassOn, PeerMessage, Principal

from .config import OrchestratorSettings
from .domain import Directory, Job
from .domain.job_request import JobRequest
from .usecases import advance, dispatch, jobs, reports
from .usecases.catchup import FACT_TYPES
from .usecases.streams import JOB_FOLD, PRODUCER, JobsCache

__all__ = ["ORCHESTRATOR_SUBSCRIPTIONS", "PEER_REPORTS", "OrchestratorApp"]

PEER_REPORTS: dict[str, type[BaseModel]] = {
    ACCEPTED: TaskAcceptedBody,
    PROGRESS: TaskProgressBody,
    FAILED: TaskFailedBody,
}
"""Peers' reports on their tasks, by message kind."""

ORCHESTRATOR_SUBSCRIPTIONS: Table = (
    # other services' events and every job event, on a queue of this instance's own
    # (every instance hears everything) -> fold, and decide for the jobs it holds
    On("feed", (*FACT_TYPES, *JOB_EVENT_TYPES), "on_event", per_instance=True),
    # task.assigned -> the task message to its peer on peertrain.peers, sent by the job's
    # holder only: every instance hears it, so the holder always does (see dispatch)
    On("tasks", (TASK_ASSIGNED,), "on_dispatch", per_instance=True),
    # job.cancelled / a surplus task.lost -> cancel messages to the peers concerned, by
    # whichever instance hears it
    On("dispatch", (JOB_CANCELLED, TASK_LOST), "on_dispatch"),
    # peers' accepted / progress / failed telemetry -> task events, a job's reports
    # recorded together (handled as they come, each acknowledged once recorded)
    On("peers", tuple(PEER_REPORTS), "on_peer", peers=PEER_REPORTS, ordered=False),
)
"""What the orchestrator hears, and which of :class:`OrchestratorApp`'s methods gets it."""


class OrchestratorApp:
    """The service's ports and its working memory (all rebuildable from the log).

    Parameters
    ----------
    ports
        The event log, the bucket, the clock, the publisher to peers, and the leases
        (:class:`~peertrain.common.leases.SoleInstance` when none are given).
    settings
        The service's settings (defaults when not given).
    check_keys
        Draws a configured job's secret for checked work
        (:attr:`~peertrain.common.events.training.JobConfigured.check_key`): 63 random
        bits by default; the simulation gives a seeded one, so that its runs repeat.
    """

    def __init__(
        self,
        ports: Ports,
        settings: OrchestratorSettings | None = None,
        *,
        check_keys: Callable[[], int] | None = None,
    ) -> None:
        self.ports = ports
        self.settings = settings or OrchestratorSettings()
        self.check_keys: Callable[[], int] = check_keys or (lambda: secrets.randbits(63))
        self.directory = Directory()
        """Peers and datasets, as folded from their events."""
        self.jobs: dict[str, Job] = {}
        self.lock = asyncio.Lock()
        """Serialises every decision, lease renewal and read of a job that leads to a
        send; never taken by a user's read (see ``catchup.read_on``)."""
        self.ready = False
        """The log was replayed (routes answer 503 before)."""
        self.dispatching: dict[str, asyncio.Task[bool]] = {}
        """``task.assigned`` event id -> its in-process dispatch (see ``dispatch_soon``)."""
        self.folded = asyncio.Condition()
        """Notified whenever the feed folded an event into a job (see :meth:`folded_to`)."""
        self.repository: Repository[Job] = Repository(
            ports.log, JOB_FOLD, producer=PRODUCER, cache=JobsCache(self.jobs)
        )
        """Job streams: load, decide, append, with :attr:`jobs` as the cache."""
        self.leases: Holding = ports.leases if ports.leases is not None else SoleInstance()
        """The jobs this instance works on (every instance reads them all)."""
        self.reports: dict[str, reports.ReportBatch] = {}
        """Job id -> its peers' reports waiting to be recorded together."""

    # -- ports -------------------------------------------------------------------------

    @property
    def log(self) -> LogPort:
        """The shared event log."""
        return self.ports.log

    @property
    def blobs(self) -> BlobPort:
        """The bucket (configured for this service)."""
        assert self.ports.blobs is not None
        return self.ports.blobs

    @property
    def clock(self) -> Clock:
        """What time it is."""
        return self.ports.clock

    @property
    def publisher(self) -> Publisher:
        """Where messages to peers go."""
        assert self.ports.publisher is not None
        return self.ports.publisher

    # -- what drives it ----------------------------------------------------------------

    async def on_event(self, event: RecordedEvent) -> None:
        """A fact or a job event from the feed: fold it, and advance what it concerns."""
        await advance.on_fact(self, event)

    async def on_dispatch(self, event: RecordedEvent) -> None:
        """``task.assigned`` -> the task message; ``job.cancelled`` and a surplus
        ``task.lost`` -> cancel messages."""
        await dispatch.dispatch(self, event)

    async def on_peer(self, message: PeerMessage[Any]) -> None:
        """A peer's report on its task (accepted, progress, failed); returns once it is
        recorded, with the job's others of the next ``report_linger_s``. On its first
        delivery, passed on when another instance holds the job.

        The instances share the queue of reports. Recorded by an instance that does not
        hold the job, a report's append raced the holder's on the job stream (about a
        third of the reports lost that race and were recorded again); handed back to
        the queue (:class:`~peertrain.common.security.PassOn`), it most often reaches
        the holder, as the aggregators' updates do."""
        if pass_on_to_holder(self.leases, message.body.job_id, message.deliveries):
            raise PassOn()
        await reports.record_report(self, message)

    async def tick(self) -> None:
        """Leases, deadlines, and anything a failed append left undecided."""
        await advance.tick(self)

    async def replay(self) -> None:
        """Rebuild every job and the directory from the log (start-up); ready after."""
        await advance.replay(self)

    # -- commands (the routes' use cases) ----------------------------------------------

    async def create_job(self, request: JobRequest, who: Principal) -> Job:
        """Check and create a job (see :func:`~.usecases.jobs.create_job`)."""
        return await jobs.create_job(self, request, who)

    async def open_job(self, created: JobCreated, *, actor: str | None = None) -> Job:
        """Append a job already checked and planned (see :func:`~.usecases.jobs.open_job`)."""
        async with self.lock:
            return await jobs.open_job(self, created, actor=actor)

    async def cancel_job(self, job_id: str, who: Principal) -> Job:
        """Cancel a running job (see :func:`~.usecases.jobs.cancel_job`)."""
        return await jobs.cancel_job(self, job_id, who)

    async def read_job(self, job_id: str, who: Principal) -> Job:
        """A job as its streams hold it now (see :func:`~.usecases.jobs.read_job`)."""
        return await jobs.read_job(self, job_id, who)

    # -- waiting on the feed -----------------------------------------------------------

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
