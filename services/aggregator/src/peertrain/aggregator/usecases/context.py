"""What every aggregator use case works with: connections, caches, per-job locks.

A job's state folds the orchestrator's ``job:<id>`` and this service's own
``model:<id>`` stream; the aggregate repository keeps it, keyed by the model stream
(the one appended to here). Any instance checks and records peers' updates; only the
holder of a job's lease (:attr:`AggregatorContext.leases`) makes its model versions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import structlog
import torch

from peertrain.aggregator.config import AggregatorSettings
from peertrain.aggregator.domain import JobState
from peertrain.common.app import ServiceContext
from peertrain.common.blobs import BlobStore
from peertrain.common.eventlog import EventLog, Loaded, Repository
from peertrain.common.events import EventData, RecordedEvent
from peertrain.common.events.models import model_stream
from peertrain.common.events.training import job_stream
from peertrain.common.leases import Holding, leases_for

from ..projections import MODEL_FOLD
from .numerics import RoundWork

__all__ = ["AggregatorContext"]

log = structlog.get_logger(__name__)


@dataclass
class AggregatorContext:
    """The service's resources and its per-job working memory.

    Everything cached here is rebuildable from the log and the bucket: the job states
    in ``models`` are caught up from the log before every decision, ``rounds`` (running
    accumulators) is used only when it holds exactly what a closing round includes, and
    ``bases`` only when its version matches.
    """

    ctx: ServiceContext
    settings: AggregatorSettings
    rounds: dict[str, RoundWork] = field(default_factory=dict)
    bases: dict[str, tuple[int, dict[str, torch.Tensor]]] = field(default_factory=dict)
    holdouts: dict[str, tuple[str, torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    """Each job's holdout (its sha256, then ``x``, ``y``), fetched and checked once."""
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)
    """Jobs configured and not ended, as heard (the ones an instance may take over)."""
    stalled: dict[str, datetime] = field(default_factory=dict)
    """Held jobs that looked stalled, since when (see ``holding.redrive_stalled``)."""
    models: Repository[JobState] = field(init=False)
    """Job states by model stream: loaded, appended to, cached (least recent out)."""
    leases: Holding = field(init=False)
    """The jobs whose model versions this instance makes."""

    def __post_init__(self) -> None:
        settings = self.settings
        self.models = Repository(self.ctx.log, MODEL_FOLD, producer=settings.service_name)
        self.leases = leases_for(self.ctx.db, settings)

    @property
    def log(self) -> EventLog:
        """The shared event log."""
        return self.ctx.log

    @property
    def blobs(self) -> BlobStore:
        """The bucket."""
        assert self.ctx.blobs is not None, "the aggregator runs with a blob store"
        return self.ctx.blobs

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
    ) -> JobState:
        """The job's state, caught up with the log as far as the caller needs.

        A job seen for the first time is read from both of its streams. After that the
        cache is kept current without reading (a read scans the whole log on FerretDB):
        the model stream is this service's own (every append is folded in; after a
        conflict it is read on from its version), and a job event that is the next of
        its stream is folded straight in. The streams are
        read on only when ``event`` shows a gap, or when the caller asks
        (``catch_up``: an update names a task the cache does not know yet). Other
        instances append accepted updates too: ``fresh_models`` reads on the model
        stream (before a round's version is made).
        """
        stream = model_stream(job_id)
        first = self.models.cached(stream) is None
        state = (await self.models.load(stream, refresh=fresh_models)).state
        if first:
            return state  # both streams were just read
        own = event is not None and event.stream == job_stream(job_id)
        if own and event is not None and event.seq == state.job_seq + 1:
            state.apply(event)
        elif catch_up or (own and event is not None and event.seq > state.job_seq):
            # both streams, from where the state got, in log order (the loader's read-on)
            state = (await self.models.load(stream, refresh=True)).state
        return state

    async def read_only(self, job_id: str) -> JobState:
        """The job's state read afresh from the log (for HTTP readers; caches nothing)."""
        return (await self.models.read(model_stream(job_id))).state

    async def append(
        self,
        state: JobState,
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
        reading the job stream (a read that cost the whole stream on FerretDB).
        """
        loaded = self.models.cached(model_stream(job_id))
        if loaded is not None and event.seq == loaded.state.job_seq + 1:
            loaded.state.apply(event)

    def holder_memory(self) -> set[str]:
        """The jobs this instance keeps a holder's working memory for (running sums,
        holdouts)."""
        return {*self.rounds, *self.holdouts}

    def let_go(self, job_id: str) -> None:
        """Drop a holder's working memory of a job handed over (or lost): its running
        sum and holdout are the new holder's business. The job's state and base model
        stay: any instance checks the job's updates."""
        work = self.rounds.pop(job_id, None)
        if work is not None:
            work.close()
        self.holdouts.pop(job_id, None)

    def forget(self, job_id: str) -> None:
        """Drop everything kept on an ended job (its state is in the log)."""
        self.let_go(job_id)
        self.bases.pop(job_id, None)
        self.models.forget(model_stream(job_id))
        log.info("job forgotten", job_id=job_id)
