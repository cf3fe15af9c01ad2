"""The aggregator's application: its ports, its per-job working memory, what it hears.

A job's state (:class:`~.domain.JobMemory`, a pure fold) folds the orchestrator's
``job:<id>`` stream and this service's own ``model:<id>`` stream (:data:`MODEL_FOLD`);
the aggregate repository keeps it, keyed by the model stream (the one appended to
here). Any instance checks and records peers' updates; only the holder of a job's lease
(:attr:`AggregatorApp.leases`) makes its model versions.

What it hears (:data:`AGGREGATOR_SUBSCRIPTIONS`, bound by the platform with
:func:`~peertrain.common.app.subscribe` and by the simulation and unit tests with
:func:`~peertrain.common.app.deliver`):

``<prefix>.feed.<instance>`` (``peertrain.events``)
    the orchestrator's job events, on a queue of this instance's own (every instance
    hears them all) -> :meth:`AggregatorApp.on_event`. Those in
    :data:`~.usecases.holding.JOB_EVENTS` reconcile the jobs this instance holds: v0
    on ``job.configured``, v<r> + evaluation on ``round.closed``, the export after the
    last round. Idempotent by construction: the work is decided from the log, which
    says what is done. The others (a task accepted, its progress, ...) are folded into
    the job's cached state, which then follows the job stream without reading it.
    And every ``update.accepted`` (any instance's): the holder folds into the round's
    running sum those another instance accepted (:func:`~.usecases.updates.fold_recorded`),
    so that a round closes on its running sum, not on a rebuild from the bucket.
``<prefix>.updates`` (``peertrain.telemetry``, ``peer.*.update``)
    peers' announced updates, verified (token and sender) ->
    :meth:`AggregatorApp.on_peer`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime

import structlog
import torch

from peertrain.common.app import On, Ports, Table
from peertrain.common.blobs import BlobPort
from peertrain.common.clock import Clock
from peertrain.common.eventlog import Fold, Loaded, LogPort, Repository
from peertrain.common.events import EventData, RecordedEvent
from peertrain.common.events.models import UPDATE_ACCEPTED, model_stream
from peertrain.common.events.tasks import UPDATE, UpdateAnnounced
from peertrain.common.events.training import JOB_EVENT_TYPES, job_stream
from peertrain.common.leases import Holding, pass_on_to_holder
from peertrain.common.security import PassOn, PeerMessage

from .config import AggregatorSettings
from .domain import JobMemory
from .metrics import UPDATES
from .usecases.holding import JOB_EVENTS, fold_job_event, keep_leases, on_job_event
from .usecases.numerics import RoundWork
from .usecases.storage import DeltaCache
from .usecases.updates import fold_recorded, receive_update
from .usecases.versions import StoredVersion

__all__ = ["AGGREGATOR_SUBSCRIPTIONS", "MODEL_FOLD", "AggregatorApp"]

log = structlog.get_logger(__name__)


def _apply(state: JobMemory, event: RecordedEvent) -> JobMemory:
    state.apply(event)
    return state


def _folded(state: JobMemory, source: str) -> int | None:
    """How far ``state`` has folded the job stream (``source``)."""
    return state.job_seq if source.startswith("job:") else None


MODEL_FOLD: Fold[JobMemory] = Fold(
    initial=lambda stream: JobMemory(stream.partition(":")[2]),
    apply=_apply,
    streams=lambda stream: (job_stream(stream.partition(":")[2]), stream),
    folded=_folded,
)
"""A job as the aggregator sees it, keyed by ``model:<id>``: the job stream and the model
stream, read (and read on) together, in log order."""


class AggregatorApp:
    """The service's ports and its per-job working memory.

    Everything cached here is rebuildable from the log and the bucket: the job states
    in ``models`` are caught up from the log before every decision, ``rounds`` (running
    accumulators) is used only when it holds exactly what a closing round includes, and
    ``bases`` only when its version matches.

    Parameters
    ----------
    ports
        The event log, the bucket (required), the leases (required: the platform's
        :func:`~peertrain.common.leases.leases_for`, the simulation's
        :class:`~peertrain.common.leases.SoleInstance`) and the clock.
    settings
        The service's settings.
    """

    def __init__(self, ports: Ports, settings: AggregatorSettings) -> None:
        if ports.blobs is None or ports.leases is None:
            raise ValueError("the aggregator runs with a blob store and leases")
        self.ports = ports
        self.settings = settings
        self.rounds: dict[str, RoundWork] = {}
        """Each held job's running sum of its open round."""
        self.early: dict[str, StoredVersion] = {}
        """Each held job's version made before its round closed (``build_early``)."""
        self.bases: dict[str, tuple[int, dict[str, torch.Tensor]]] = {}
        self.holdouts: dict[str, tuple[str, torch.Tensor, torch.Tensor]] = {}
        """Each job's holdout (its sha256, then ``x``, ``y``), fetched and checked once."""
        self.deltas = DeltaCache(settings.delta_cache_bytes)
        """The accepted updates' deltas this instance decoded, for rounds made again."""
        self._locks: dict[str, asyncio.Lock] = {}
        self.checking = asyncio.Semaphore(settings.update_workers)
        """Bounds the announced updates downloaded and checked at once."""
        self.active: set[str] = set()
        """Jobs configured and not ended, as heard (the ones an instance may take over)."""
        self.stalled: dict[str, datetime] = {}
        """Held jobs that looked stalled, since when (see ``holding.redrive_stalled``)."""
        self.models: Repository[JobMemory] = Repository(
            ports.log, MODEL_FOLD, producer=settings.service_name
        )
        """Job states by model stream: loaded, appended to, cached (least recent out)."""
        self.leases: Holding = ports.leases
        """The jobs whose model versions this instance makes."""

    # -- what it hears ----------------------------------------------------------------

    async def on_event(self, event: RecordedEvent) -> None:
        """A job event: acted on (:data:`~.usecases.holding.JOB_EVENTS`), or folded; an
        accepted update: folded into the running sum by the job's holder."""
        job_id = getattr(event.data, "job_id", None)
        if not isinstance(job_id, str):
            return
        if event.type == UPDATE_ACCEPTED:
            await fold_recorded(self, job_id, event)
        elif event.type in JOB_EVENTS:
            await on_job_event(self, job_id, event)
        else:
            await fold_job_event(self, job_id, event)

    async def on_peer(self, message: PeerMessage[UpdateAnnounced]) -> None:
        """A peer's verified ``peer.<id>.update``: checked, recorded, folded; or, on its
        first delivery, passed on when another instance holds the job.

        The instances share the queue of updates. One that does not hold the job hands
        a first delivery back to the queue (:class:`~peertrain.common.security.PassOn`),
        whose next delivery goes, most often, to another instance: the holder then
        checks, records and folds it itself. Before, two instances recorded a job's
        updates side by side, and half of their appends lost to each other's. A second
        delivery is handled by whichever instance gets it, as before, so an update is
        handed back at most once (also while no instance holds the job)."""
        if pass_on_to_holder(self.leases, message.body.job_id, message.deliveries):
            UPDATES.labels(outcome="passed_on", code="").inc()
            raise PassOn()
        await receive_update(self, message)

    async def tick(self) -> None:
        """Renew leases; take over (and reconcile) the jobs of stopped instances; read on
        the held jobs that look stalled."""
        await keep_leases(self)

    # -- ports ------------------------------------------------------------------------

    @property
    def log(self) -> LogPort:
        """The shared event log."""
        return self.ports.log

    @property
    def blobs(self) -> BlobPort:
        """The bucket."""
        assert self.ports.blobs is not None, "the aggregator runs with a blob store"
        return self.ports.blobs

    @property
    def clock(self) -> Clock:
        """What time it is."""
        return self.ports.clock

    # -- job states -------------------------------------------------------------------

    def lock(self, job_id: str) -> asyncio.Lock:
        """The lock serialising everything this process does for one job."""
        return self._locks.setdefault(job_id, asyncio.Lock())

    async def load(
        self,
        job_id: str,
        event: RecordedEvent | None = None,
        *,
        catch_up: bool = False,
        fresh_models: bool = False,
    ) -> JobMemory:
        """The job's state, caught up with the log as far as the caller needs.

        A job seen for the first time is read from both of its streams. After that the
        cache is kept current without reading (a read scans the whole log on FerretDB):
        the model stream is this service's own (every append is folded in; after a
        conflict it is read on from its version), and a job event that is the next of
        its stream is folded straight in (:meth:`Loader.observe`). The loader reads both
        streams on, from where the state got, in log order, only when an event showed a
        gap (the state is stale), or when the caller asks (``catch_up``: an update names
        a task the cache does not know yet; ``fresh_models``: other instances append
        accepted updates too, read before a round's version is made).
        """
        stream = model_stream(job_id)
        if self.models.cached(stream) is None:
            return (await self.models.load(stream)).state  # both streams, read just now
        if event is not None:  # the next one of its stream folded in; after a gap, stale
            self.models.observe(event, into=stream)
        return (await self.models.load(stream, refresh=catch_up or fresh_models)).state

    async def read_only(self, job_id: str) -> JobMemory:
        """The job's state read afresh from the log (for HTTP readers; caches nothing)."""
        return (await self.models.read(model_stream(job_id))).state

    async def append(
        self,
        state: JobMemory,
        data: Sequence[EventData],
        *,
        causation: RecordedEvent | None = None,
        actor: str | None = None,
    ) -> list[RecordedEvent]:
        """Append model events right after what ``state`` has seen, and fold them in.

        Raises
        ------
        ConcurrencyError
            When the stream moved (another writer): the message is retried, and the
            state, caught up by then, decides again (it finds the work done).
        """
        loaded = Loaded(model_stream(state.job_id), state, state.model_seq)
        saved = await self.models.save(
            loaded, data, causation=causation, actor=actor, correlation_id=state.job_id
        )
        return list(saved.events)

    def observe(self, job_id: str, event: RecordedEvent) -> None:
        """Fold an event of the job's stream into its cached state if it is the next one
        (no I/O).

        Every instance hears every job event; one that does not hold the job folds them
        here, so the state it checks the job's updates against stays current without
        reading the job stream (a read that cost the whole stream on FerretDB). After a
        gap the state is stale: its next load reads on.
        """
        self.models.observe(event, into=model_stream(job_id))

    # -- working memory ---------------------------------------------------------------

    def holder_memory(self) -> set[str]:
        """The jobs this instance keeps a holder's working memory for (running sums,
        holdouts)."""
        return {*self.rounds, *self.early, *self.holdouts}

    def let_go(self, job_id: str) -> None:
        """Drop a holder's working memory of a job handed over (or lost): its running
        sum and holdout are the new holder's business. The job's state and base model
        stay: any instance checks the job's updates."""
        work = self.rounds.pop(job_id, None)
        if work is not None:
            work.close()
        self.early.pop(job_id, None)
        self.holdouts.pop(job_id, None)

    def forget(self, job_id: str) -> None:
        """Drop everything kept on an ended job (its state is in the log)."""
        self.let_go(job_id)
        self.bases.pop(job_id, None)
        self.deltas.forget(job_id)
        self.models.forget(model_stream(job_id))
        log.info("job forgotten", job_id=job_id)


AGGREGATOR_SUBSCRIPTIONS: Table = (
    On("feed", (*JOB_EVENT_TYPES, UPDATE_ACCEPTED), "on_event", per_instance=True),
    # handled as they come (up to ``update_workers`` at once; see ``receive_update``)
    On("updates", (UPDATE,), "on_peer", peers={UPDATE: UpdateAnnounced}, ordered=False),
)
"""What the aggregator hears (see the module's docstring)."""
