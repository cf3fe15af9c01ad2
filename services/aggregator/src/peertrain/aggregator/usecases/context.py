"""What every aggregator use case works with: connections, caches, per-job locks."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog
import torch

from peertrain.aggregator.config import AggregatorSettings
from peertrain.aggregator.domain import JobState
from peertrain.common.app import ServiceContext
from peertrain.common.blobs import BlobStore
from peertrain.common.eventlog import EventLog
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.jobs import job_stream
from peertrain.common.events.models import model_stream

from .numerics import RoundWork

__all__ = ["AggregatorContext"]

log = structlog.get_logger(__name__)


@dataclass
class AggregatorContext:
    """The service's resources and its per-job working memory.

    Everything cached here is rebuildable from the log and the bucket: ``states`` is
    caught up from the log before every decision, ``rounds`` (running accumulators) is
    used only when it holds exactly what a closing round includes, and ``bases`` only
    when its version matches.
    """

    ctx: ServiceContext
    settings: AggregatorSettings
    states: dict[str, JobState] = field(default_factory=dict)
    rounds: dict[str, RoundWork] = field(default_factory=dict)
    bases: dict[str, tuple[int, dict[str, torch.Tensor]]] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

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
        self, job_id: str, event: RecordedEvent | None = None, *, catch_up: bool = False
    ) -> JobState:
        """The job's state, caught up with the log as far as the caller needs.

        A job seen for the first time is read from both of its streams. After that the
        cache is kept current without reading (a read scans the whole log on FerretDB):
        the model stream is this service's own (every append is folded in), and a job
        event that is the next of its stream is folded straight in. The job stream is
        read again only when ``event`` shows a gap, or when the caller asks
        (``catch_up``: an update names a task the cache does not know yet).
        """
        state = self.states.get(job_id)
        if state is None:
            state = JobState(job_id)
            for stream in (job_stream(job_id), model_stream(job_id)):
                for recorded in await self.log.read_stream(stream):
                    state.apply(recorded)
        else:
            own = event is not None and event.stream == job_stream(job_id)
            if own and event is not None and event.seq == state.job_seq + 1:
                state.apply(event)
            elif catch_up or (own and event is not None and event.seq > state.job_seq):
                for recorded in await self.log.read_stream(
                    job_stream(job_id), after_seq=state.job_seq
                ):
                    state.apply(recorded)
        if state.job_seq or state.model_seq:
            self.states[job_id] = state
        return state

    async def read_only(self, job_id: str) -> JobState:
        """The job's state read afresh from the log (for HTTP readers; caches nothing)."""
        state = JobState(job_id)
        for stream in (job_stream(job_id), model_stream(job_id)):
            for event in await self.log.read_stream(stream):
                state.apply(event)
        return state

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
            caught-up state then decides again (it finds the work done).
        """
        events = [
            NewEvent.of(
                d,
                producer=self.settings.service_name,
                actor=actor,
                correlation_id=state.job_id,
                causation=causation,
            )
            for d in data
        ]
        recorded = await self.log.append(
            model_stream(state.job_id), events, expected_version=state.model_seq
        )
        for event in recorded:
            state.apply(event)
        return recorded

    def forget(self, job_id: str) -> None:
        """Drop a finished job's working memory (its state is in the log)."""
        work = self.rounds.pop(job_id, None)
        if work is not None:
            work.close()
        self.bases.pop(job_id, None)
        self.states.pop(job_id, None)
        log.info("job forgotten", job_id=job_id)
