"""The dataset aggregate through the repository: validation's outcome and deletion race."""

from __future__ import annotations

from peertrain.common.eventlog import MemoryEventLog, Repository
from peertrain.common.events import EventData, NewEvent
from peertrain.common.events.datasets import (
    ArtifactRef,
    DatasetDeleted,
    DatasetRejected,
    DatasetUploaded,
)
from peertrain.dataset.application import DATASET_FOLD
from peertrain.dataset.domain.dataset import DatasetState, fold
from peertrain.dataset.usecases.validate import _while_validating

STREAM = "dataset:d"


async def write(log: MemoryEventLog, data: EventData) -> None:
    """Append ``data`` to the dataset's stream, wherever it stands (the service, or the
    owner elsewhere)."""
    new = NewEvent.of(data, producer="dataset")
    await log.append(STREAM, [new], expected_version=await log.stream_version(STREAM))


def uploaded() -> DatasetUploaded:
    raw = ArtifactRef(key="datasets/d/raw/a.csv", sha256="0" * 64, size=10)
    return DatasetUploaded(
        dataset_id="d", owner_id="u", name="a", filename="a.csv", raw=raw, holdout_fraction=0.2
    )


REJECTED = DatasetRejected(dataset_id="d", code="single_class", message="one class")


async def test_the_outcome_is_recorded_while_the_dataset_waits_for_it() -> None:
    log = MemoryEventLog()
    await write(log, uploaded())
    repo: Repository[DatasetState | None] = Repository(log, DATASET_FOLD, producer="dataset")
    saved = await repo.execute(STREAM, _while_validating(REJECTED))
    assert [e.seq for e in saved.events] == [2]
    assert saved.state is not None and saved.state.status == "rejected"
    assert saved.state == fold(log.events)


async def test_a_dataset_deleted_meanwhile_gets_no_outcome() -> None:
    log = MemoryEventLog()
    await write(log, uploaded())
    repo: Repository[DatasetState | None] = Repository(log, DATASET_FOLD, producer="dataset")
    before = await repo.load(STREAM)
    assert before.state is not None and before.state.status == "validating"
    await write(log, DatasetDeleted(dataset_id="d", owner_id="u"))  # the owner, elsewhere
    saved = await repo.execute(STREAM, _while_validating(REJECTED))
    assert saved.events == () and len(log.events) == 2
    assert saved.state is not None and saved.state.status == "deleted"


async def test_the_fold_starts_at_the_upload() -> None:
    log = MemoryEventLog()
    assert fold([]) is None
    await write(log, uploaded())
    state = fold(log.events)
    assert state is not None and (state.status, state.version) == ("validating", 1)
