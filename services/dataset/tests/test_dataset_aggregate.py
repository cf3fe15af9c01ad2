"""The dataset aggregate through the repository: validation's outcome and deletion race."""

from __future__ import annotations

from collections.abc import Sequence

from peertrain.common.eventlog import ConcurrencyError, Repository
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.datasets import (
    ArtifactRef,
    DatasetDeleted,
    DatasetRejected,
    DatasetUploaded,
)
from peertrain.dataset.domain.dataset import DatasetState, fold
from peertrain.dataset.usecases.context import DATASET_FOLD
from peertrain.dataset.usecases.validate import _while_validating

STREAM = "dataset:d"


class Log:
    """Stream reads and appends in memory, conflicting like the event log."""

    def __init__(self) -> None:
        self.events: list[RecordedEvent] = []

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        return [e for e in self.events if e.stream == stream and e.seq > after_seq]

    async def append(
        self, stream: str, events: Sequence[NewEvent], *, expected_version: int
    ) -> list[RecordedEvent]:
        if len(self.events) != expected_version:
            raise ConcurrencyError(stream, expected_version)
        return [self.write(e.data) for e in events]  # type: ignore[arg-type]

    def write(self, data: EventData) -> RecordedEvent:
        seq = len(self.events) + 1
        self.events.append(NewEvent.of(data, producer="dataset").stored_as(STREAM, seq, seq))
        return self.events[-1]


def uploaded() -> DatasetUploaded:
    raw = ArtifactRef(key="datasets/d/raw/a.csv", sha256="0" * 64, size=10)
    return DatasetUploaded(
        dataset_id="d", owner_id="u", name="a", filename="a.csv", raw=raw, holdout_fraction=0.2
    )


REJECTED = DatasetRejected(dataset_id="d", code="single_class", message="one class")


async def test_the_outcome_is_recorded_while_the_dataset_waits_for_it() -> None:
    log = Log()
    log.write(uploaded())
    repo: Repository[DatasetState | None] = Repository(log, DATASET_FOLD, producer="dataset")
    saved = await repo.execute(STREAM, _while_validating(REJECTED))
    assert [e.seq for e in saved.events] == [2]
    assert saved.state is not None and saved.state.status == "rejected"
    assert saved.state == fold(log.events)


async def test_a_dataset_deleted_meanwhile_gets_no_outcome() -> None:
    log = Log()
    log.write(uploaded())
    repo: Repository[DatasetState | None] = Repository(log, DATASET_FOLD, producer="dataset")
    before = await repo.load(STREAM)
    assert before.state is not None and before.state.status == "validating"
    log.write(DatasetDeleted(dataset_id="d", owner_id="u"))  # the owner, elsewhere
    saved = await repo.execute(STREAM, _while_validating(REJECTED))
    assert saved.events == () and len(log.events) == 2
    assert saved.state is not None and saved.state.status == "deleted"


def test_the_fold_starts_at_the_upload() -> None:
    log = Log()
    assert fold([]) is None
    log.write(uploaded())
    state = fold(log.events)
    assert state is not None and (state.status, state.version) == ("validating", 1)
