"""The dataset service's application on in-memory ports, driven as the platform drives
it: a command (an upload), then every event the log takes handed to the methods its
subscription table binds (:func:`~peertrain.common.app.deliver`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import numpy as np
import pytest

from peertrain.common.app import deliver
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.datasets import (
    DATASET_SHARDED,
    DATASET_SHARDING_FAILED,
    DatasetRejected,
    DatasetSharded,
    DatasetShardingFailed,
    DatasetValidated,
    sharding_stream,
)
from peertrain.common.events.training import JobCreated
from peertrain.dataset.application import DATASET_SUBSCRIPTIONS, DatasetApp
from peertrain.dataset.domain.dataset import raw_prefix, schema_key
from peertrain.dataset.domain.errors import DatasetNotFound, DatasetQuotaExceeded
from peertrain.dataset.domain.sharding import FixedStrategy
from peertrain.dataset.prepare.shards import job_prefix, shard_key
from peertrain.dataset.usecases.manage import delete_dataset, get_dataset
from peertrain.dataset.usecases.upload import receive_upload

BOUNDARY = "----peertrain-app-test"
OWNER = "user-1"


def form(csv: bytes, filename: str = "data.csv") -> bytes:
    head = (
        f"--{BOUNDARY}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: text/csv\r\n\r\n"
    )
    return head.encode() + csv + f"\r\n--{BOUNDARY}--\r\n".encode()


async def once(data: bytes) -> AsyncIterator[bytes]:
    yield data


class Platform:
    """Hands each event the log takes, once and in log order, to the application (as
    the platform's queues would, without their redeliveries)."""

    def __init__(self, app: DatasetApp) -> None:
        self.app = app
        self.delivered = 0

    async def settle(self) -> list[RecordedEvent]:
        """Deliver every event appended since the last call (and what they cause)."""
        handed: list[RecordedEvent] = []
        while new := [e async for e in self.app.log.read_all(after_position=self.delivered)]:
            for event in new:
                self.delivered += 1
                await deliver(DATASET_SUBSCRIPTIONS, self.app, event)
                handed.append(event)
        return handed

    async def upload(self, csv: bytes, owner: str = OWNER) -> str:
        """Upload ``csv`` as ``owner``; the new dataset's id."""
        body = form(csv)
        event = await receive_upload(
            self.app,
            once(body),
            content_type=f"multipart/form-data; boundary={BOUNDARY}",
            content_length=len(body),
            owner_id=owner,
        )
        await self.settle()
        return str(event.correlation_id)

    async def create_job(self, dataset_id: str, peers: int, owner: str = OWNER) -> RecordedEvent:
        """Append ``job.created`` (as the orchestrator would) and settle."""
        job = JobCreated(
            job_id=f"job-{dataset_id}",
            owner_id=owner,
            name="a job",
            dataset_id=dataset_id,
            peers=tuple(f"peer-{k}" for k in range(peers)),
        )
        stream = f"job:{job.job_id}"
        [event] = await self.app.log.append(
            stream, [NewEvent.of(job, producer="orchestrator")], expected_version=0
        )
        await self.settle()
        return event


@pytest.fixture
def platform(dataset_app: DatasetApp) -> Platform:
    return Platform(dataset_app)


def one_class(rows: int = 20) -> bytes:
    return ("x,label\n" + "".join(f"{i},only\n" for i in range(rows))).encode()


async def outcomes(app: DatasetApp, dataset_id: str) -> list[object]:
    return [e.data for e in await app.log.read_stream(f"dataset:{dataset_id}")]


async def test_an_upload_is_validated_stored_and_listed(
    platform: Platform, dataset_app: DatasetApp, clean_csv: bytes
) -> None:
    dataset_id = await platform.upload(clean_csv)
    events = await outcomes(dataset_app, dataset_id)
    assert [type(e).__name__ for e in events] == ["DatasetUploaded", "DatasetValidated"]
    validated = events[1]
    assert isinstance(validated, DatasetValidated)
    assert validated.classes == ("setosa", "versicolor", "virginica")
    assert validated.train_rows + validated.holdout_rows == 60
    stored = dataset_app.blobs.objects  # type: ignore[attr-defined]
    for ref in (validated.train_x, validated.train_y, validated.holdout, validated.preview):
        assert ref.key in stored
    assert schema_key(dataset_id) in stored
    doc = await get_dataset(dataset_app, dataset_id, OWNER)
    assert doc["status"] == "validated" and doc["rows"] == 60
    assert await dataset_app.views.list_for(OWNER, limit=10, offset=0) != []


async def test_an_upload_with_one_class_is_rejected_and_its_objects_removed(
    platform: Platform, dataset_app: DatasetApp
) -> None:
    dataset_id = await platform.upload(one_class())
    events = await outcomes(dataset_app, dataset_id)
    assert isinstance(events[-1], DatasetRejected) and events[-1].code == "single_class"
    stored = dataset_app.blobs.objects  # type: ignore[attr-defined]
    assert not [k for k in stored if k.startswith(raw_prefix(dataset_id))]
    doc = await get_dataset(dataset_app, dataset_id, OWNER)
    assert doc["status"] == "rejected" and doc["error"]["code"] == "single_class"


async def test_an_upload_delivered_again_is_validated_once(
    platform: Platform, dataset_app: DatasetApp, clean_csv: bytes
) -> None:
    dataset_id = await platform.upload(clean_csv)
    [uploaded, *_] = await dataset_app.log.read_stream(f"dataset:{dataset_id}")
    await deliver(DATASET_SUBSCRIPTIONS, dataset_app, uploaded)
    await platform.settle()
    events = await outcomes(dataset_app, dataset_id)
    assert [type(e).__name__ for e in events] == ["DatasetUploaded", "DatasetValidated"]


async def test_a_job_gets_one_shard_per_peer_and_the_holdout_once(
    platform: Platform, dataset_app: DatasetApp, clean_csv: bytes
) -> None:
    dataset_id = await platform.upload(clean_csv)
    created = await platform.create_job(dataset_id, peers=3)
    await deliver(DATASET_SUBSCRIPTIONS, dataset_app, created)  # delivered again
    [outcome] = await dataset_app.log.read_stream(sharding_stream(f"job-{dataset_id}"))
    assert outcome.type == DATASET_SHARDED and isinstance(outcome.data, DatasetSharded)
    sharded = outcome.data
    assert [s.peer_id for s in sharded.shards] == ["peer-0", "peer-1", "peer-2"]
    stored = dataset_app.blobs.objects  # type: ignore[attr-defined]
    job_id = f"job-{dataset_id}"
    assert [s.key for s in sharded.shards] == [shard_key(job_id, k) for k in range(3)]
    assert all(s.key in stored for s in sharded.shards)
    validated = (await outcomes(dataset_app, dataset_id))[1]
    assert isinstance(validated, DatasetValidated)
    assert sum(s.rows or 0 for s in sharded.shards) == validated.train_rows
    assert sharded.holdout.key == f"{job_prefix(job_id)}holdout.npz"
    assert stored[sharded.holdout.key] == stored[f"{raw_prefix(dataset_id)}holdout.npz"]


async def test_a_job_is_sharded_by_the_strategy_the_application_is_given(
    platform: Platform, dataset_app: DatasetApp, clean_csv: bytes
) -> None:
    """The simulation's seam: a split its data names, instead of the job's strategy."""
    dataset_id = await platform.upload(clean_csv)
    validated = (await outcomes(dataset_app, dataset_id))[1]
    assert isinstance(validated, DatasetValidated)
    rows = np.arange(validated.train_rows)
    dataset_app.sharding_strategy = lambda _job: FixedStrategy([rows[:5], rows[5:]])
    await platform.create_job(dataset_id, peers=2)
    [outcome] = await dataset_app.log.read_stream(sharding_stream(f"job-{dataset_id}"))
    assert isinstance(outcome.data, DatasetSharded)
    assert [s.rows for s in outcome.data.shards] == [5, validated.train_rows - 5]


async def test_a_job_on_another_users_dataset_fails_to_shard(
    platform: Platform, dataset_app: DatasetApp, clean_csv: bytes
) -> None:
    dataset_id = await platform.upload(clean_csv)
    await platform.create_job(dataset_id, peers=2, owner="someone-else")
    [outcome] = await dataset_app.log.read_stream(sharding_stream(f"job-{dataset_id}"))
    assert outcome.type == DATASET_SHARDING_FAILED
    assert isinstance(outcome.data, DatasetShardingFailed)
    assert outcome.data.code == "dataset_not_found"


async def test_a_deleted_dataset_leaves_no_objects_and_is_not_found(
    platform: Platform, dataset_app: DatasetApp, clean_csv: bytes
) -> None:
    dataset_id = await platform.upload(clean_csv)
    await delete_dataset(dataset_app, dataset_id, OWNER)
    await platform.settle()
    stored = dataset_app.blobs.objects  # type: ignore[attr-defined]
    assert not [k for k in stored if k.startswith(raw_prefix(dataset_id))]
    with pytest.raises(DatasetNotFound):
        await get_dataset(dataset_app, dataset_id, OWNER)
    assert (await dataset_app.views.usage(OWNER)).datasets == 0


async def test_an_upload_past_the_datasets_quota_is_refused_and_stores_nothing(
    make_dataset_app: Callable[..., DatasetApp], clean_csv: bytes
) -> None:
    app = make_dataset_app(max_datasets_per_user=1)
    platform = Platform(app)
    await platform.upload(clean_csv)
    kept = dict(app.blobs.objects)  # type: ignore[attr-defined]
    with pytest.raises(DatasetQuotaExceeded):
        await platform.upload(clean_csv)
    assert app.blobs.objects == kept  # type: ignore[attr-defined]
    await platform.upload(clean_csv, owner="user-2")  # another user's quota
