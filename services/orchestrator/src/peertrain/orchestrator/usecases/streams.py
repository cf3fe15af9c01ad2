"""Job streams as the aggregate repository sees them: the fold and the cache.

The aggregate repository keeps its jobs in the orchestrator's own dict
(:class:`JobsCache`), so an append, or a conflict's catch-up, changes the job the rest
of the service sees. Facts from other services' streams (model, sharding) are folded
into the same objects as they arrive from the bus.
"""

from __future__ import annotations

from peertrain.common.eventlog import Cached, Fold
from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import sharding_stream
from peertrain.common.events.models import model_stream

from ..domain import Job

__all__ = ["JOB_FOLD", "PRODUCER", "JobsCache"]

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
