"""The dataset service's application: its ports, read model, limits and working memory,
and what it hears, as data (:data:`DATASET_SUBSCRIPTIONS`).

``<prefix>.uploads``
    ``dataset.uploaded`` -> validation (its own event: the upload answers at once).
``<prefix>.jobs``
    ``job.created`` -> sharding.
``<prefix>.projection``
    the lifecycle events -> the read model (version-guarded) and the repository's
    cache, and the removal of a deleted dataset's objects (repeated harmlessly if the
    route already did it).

The first two record processed events in an inbox; their effects are also guarded by
the log itself (a decided dataset is not validated again, a job's sharding stream takes
one event), so a redelivery has no second effect.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from pymongo.asynchronous.database import AsyncDatabase

from peertrain.common.app import On, Ports, Table
from peertrain.common.blobs import BlobPort
from peertrain.common.clock import Clock
from peertrain.common.eventlog import (
    VERSION_ONLY,
    Decide,
    Fold,
    LogPort,
    Repository,
    Saved,
)
from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import DATASET_UPLOADED, DatasetDeleted, dataset_stream
from peertrain.common.events.training import JOB_CREATED, JobCreated
from peertrain.common.processes import pid_alive
from peertrain.dataset.config import DatasetSettings
from peertrain.dataset.domain.dataset import DatasetState, apply, raw_prefix
from peertrain.dataset.domain.limits import Limits
from peertrain.dataset.domain.quota import Quota
from peertrain.dataset.domain.sharding import ShardingStrategy, strategy_for
from peertrain.dataset.readmodel import LIFECYCLE_EVENTS, DatasetReadModel, DatasetViews

from .usecases.shard import shard_for_job
from .usecases.validate import validate_upload

__all__ = ["DATASET_FOLD", "DATASET_SUBSCRIPTIONS", "DatasetApp", "job_strategy"]

log = structlog.get_logger(__name__)

DATASET_FOLD: Fold[DatasetState | None] = Fold(initial=lambda _stream: None, apply=apply)
"""A ``dataset:<id>`` stream folded into its :class:`DatasetState` (None until uploaded)."""


def job_strategy(job: JobCreated) -> ShardingStrategy:
    """The strategy the job's ``sharding`` block asks for."""
    return strategy_for(job.sharding)


DATASET_SUBSCRIPTIONS: Table = (
    On("uploads", (DATASET_UPLOADED,), "on_uploaded", inbox=True),
    On("jobs", (JOB_CREATED,), "on_job_created", inbox=True),
    On("projection", LIFECYCLE_EVENTS, "on_lifecycle"),
)
"""What the dataset service hears (its token-verification queue, ``<prefix>.security``,
is the common security's own)."""


@dataclass
class DatasetApp:
    """The dataset service: ports, settings, read model and limits, for routes and
    subscriptions alike; the use cases (:mod:`peertrain.dataset.usecases`) take it."""

    ports: Ports
    settings: DatasetSettings
    views: DatasetReadModel
    limits: Limits
    quota: Quota = field(default_factory=lambda: Quota(max_datasets=100, max_bytes=20 * 1024**3))
    work_slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))
    owner_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = field(
        default_factory=weakref.WeakValueDictionary
    )
    """One lock per user with an upload finishing: its quota check and its append."""
    sharding_strategy: Callable[[JobCreated], ShardingStrategy] = job_strategy
    """How a job's rows go to its shards: the strategy of its ``sharding`` block (the
    simulation hands a :class:`~peertrain.dataset.domain.sharding.FixedStrategy` when
    its data names the split)."""
    datasets: Repository[DatasetState | None] = field(init=False)
    """Datasets: load, decide, append (kept current by this service's appends and by the
    lifecycle events it projects)."""
    sharding: Repository[int] = field(init=False)
    """``sharding:<job>`` streams: one outcome each, so only their version matters."""

    def __post_init__(self) -> None:
        producer = self.settings.service_name
        self.datasets = Repository(self.log, DATASET_FOLD, producer=producer)
        self.sharding = Repository(self.log, VERSION_ONLY, producer=producer)

    @classmethod
    def build(
        cls, ports: Ports, db: AsyncDatabase[dict[str, Any]], settings: DatasetSettings
    ) -> DatasetApp:
        """The application on the service's own database (its read model)."""
        return cls.of(ports, settings, DatasetViews(db, clock=ports.clock))

    @classmethod
    def of(cls, ports: Ports, settings: DatasetSettings, views: DatasetReadModel) -> DatasetApp:
        """The application with its limits and quota from ``settings``."""
        return cls(
            ports=ports,
            settings=settings,
            views=views,
            limits=Limits.from_settings(settings),
            quota=Quota(settings.max_datasets_per_user, settings.max_bytes_per_user),
            work_slots=asyncio.Semaphore(settings.max_concurrent_work),
        )

    @property
    def log(self) -> LogPort:
        """The shared event log."""
        return self.ports.log

    @property
    def blobs(self) -> BlobPort:
        """The bucket."""
        assert self.ports.blobs is not None, "the dataset service needs the blob store"
        return self.ports.blobs

    @property
    def clock(self) -> Clock:
        """The service's time (waits for a dataset to be decided)."""
        return self.ports.clock

    @property
    def producer(self) -> str:
        """This service's name on the events it appends."""
        return self.settings.service_name

    # -- start-up and events --------------------------------------------------------------

    async def start(self) -> None:
        """Start-up: the read model's indexes, the scratch space (swept of what processes
        that died left there)."""
        await self.views.ensure_indexes()
        await asyncio.to_thread(self.settings.work_dir.mkdir, parents=True, exist_ok=True)
        await asyncio.to_thread(self.sweep_work_dir)

    async def on_uploaded(self, event: RecordedEvent) -> None:
        """``dataset.uploaded``: validate it."""
        await validate_upload(self, event)

    async def on_job_created(self, event: RecordedEvent) -> None:
        """``job.created``: shard its dataset for it."""
        await shard_for_job(self, event)

    async def on_lifecycle(self, event: RecordedEvent) -> None:
        """A lifecycle event: the repository's cache, the read model, and a deleted
        dataset's objects."""
        self.datasets.observe(event)  # keeps a cached dataset current without a read
        await self.views.apply(event)
        if isinstance(event.data, DatasetDeleted):
            await self.blobs.delete_prefix(raw_prefix(event.data.dataset_id))

    # -- helpers of the use cases ---------------------------------------------------------

    def owner_lock(self, owner_id: str) -> asyncio.Lock:
        """The user's lock (kept only while someone holds or waits for it)."""
        lock = self.owner_locks.get(owner_id)
        if lock is None:
            lock = self.owner_locks[owner_id] = asyncio.Lock()
        return lock

    async def load(self, dataset_id: str) -> DatasetState | None:
        """The dataset as the log has it now (only what followed the cached state is read)."""
        return (await self.datasets.load(dataset_stream(dataset_id), refresh=True)).state

    async def execute(
        self,
        dataset_id: str,
        decide: Decide[DatasetState | None],
        *,
        retries: int | None = None,
        refresh: bool = False,
        new: bool = False,
        actor: str | None = None,
        correlation_id: str | None = None,
        causation: RecordedEvent | None = None,
    ) -> Saved[DatasetState | None]:
        """Decide on the dataset and append (see :meth:`Repository.execute`), then update
        the read model at once (read-your-writes)."""
        saved = await self.datasets.execute(
            dataset_stream(dataset_id),
            decide,
            retries=retries,
            refresh=refresh,
            new=new,
            actor=actor,
            correlation_id=correlation_id,
            causation=causation,
        )
        try:
            for event in saved.events:
                await self.views.apply(event)
        except Exception as exc:  # the projection subscriber applies it later
            log.warning(
                "read model update deferred",
                error=repr(exc),
                stream=dataset_stream(dataset_id),
            )
        return saved

    def sweep_work_dir(self) -> int:
        """Remove scratch folders left by processes that died (their pid is gone)."""
        removed = 0
        root = Path(self.settings.work_dir)
        for entry in root.iterdir() if root.is_dir() else ():
            parts = entry.name.rsplit("-", 2)
            if len(parts) != 3 or not parts[1].isdigit() or pid_alive(int(parts[1])):
                continue
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
        return removed

    @asynccontextmanager
    async def workspace(self, label: str) -> AsyncIterator[Path]:
        """A work slot (bounded concurrency) and a fresh scratch folder, removed after."""
        async with self.work_slots:
            path = Path(self.settings.work_dir) / f"{label}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            await asyncio.to_thread(path.mkdir, parents=True, exist_ok=False)
            try:
                yield path
            finally:
                await asyncio.to_thread(shutil.rmtree, path, True)
