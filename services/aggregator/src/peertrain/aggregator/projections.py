"""The aggregator's read of the log: each job as it sees it.

A job's state (:class:`~.domain.JobState`, a pure fold) is built from the
orchestrator's ``job:<id>`` stream and this service's own ``model:<id>`` stream, and
kept by the aggregate repository (``AggregatorContext.models``), keyed by the model
stream, the one appended to here.
"""

from __future__ import annotations

from peertrain.aggregator.domain import JobState
from peertrain.common.eventlog import Fold
from peertrain.common.events import RecordedEvent
from peertrain.common.events.training import job_stream

__all__ = ["MODEL_FOLD"]


def _apply(state: JobState, event: RecordedEvent) -> JobState:
    state.apply(event)
    return state


MODEL_FOLD: Fold[JobState] = Fold(
    initial=lambda stream: JobState(stream.partition(":")[2]),
    apply=_apply,
    streams=lambda stream: (job_stream(stream.partition(":")[2]), stream),
    folded=lambda state, _job_stream: state.job_seq,
)
"""A job as the aggregator sees it, keyed by ``model:<id>``: the job stream and the model
stream, read (and read on) together, in log order."""
