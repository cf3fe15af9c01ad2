"""What every use case of the dataset service works with."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from peertrain.common.app import ServiceContext
from peertrain.common.blobs import BlobStore
from peertrain.common.eventlog import VERSION_ONLY, Decide, EventLog, Fold, Repository, Saved
from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import dataset_stream
from peertrain.common.processes import pid_alive
from peertrain.dataset.config import DatasetSettings
from peertrain.dataset.domain.dataset import DatasetState, apply
from peertrain.dataset.domain.limits import Limits
from peertrain.dataset.domain.quota import Quota
from peertrain.dataset.projections import DatasetViews

__all__ = ["DatasetContext"]

log = structlog.get_logger(__name__)

DATASET_FOLD: Fold[DatasetState | None] = Fold(initial=lambda _stream: None, apply=apply)
"""A ``dataset:<id>`` stream folded into its :class:`DatasetState` (None until uploaded)."""


@dataclass
class DatasetContext:
    """The service's resources, settings and limits, for routes and subscribers alike."""

    ctx: ServiceContext
    settings: DatasetSettings
    views: DatasetViews
    limits: Limits
    quota: Quota = field(default_factory=lambda: Quota(max_datasets=100, max_bytes=20 * 1024**3))
    work_slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))
    owner_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = field(
        default_factory=weakref.WeakValueDictionary
    )
    """One lock per user with an upload finishing: its quota check and its append."""
    datasets: Repository[DatasetState | None] = field(init=False)
    """Datasets: load, decide, append (kept current by this service's appends and by the
    lifecycle events it projects)."""
    sharding: Repository[int] = field(init=False)
    """``sharding:<job>`` streams: one outcome each, so only their version matters."""

    def __post_init__(self) -> None:
        producer = self.settings.service_name
        self.datasets = Repository(self.ctx.log, DATASET_FOLD, producer=producer)
        self.sharding = Repository(self.ctx.log, VERSION_ONLY, producer=producer)

    @classmethod
    def build(cls, ctx: ServiceContext, settings: DatasetSettings) -> DatasetContext:
        """Wire the context from a connected service."""
        return cls(
            ctx=ctx,
            settings=settings,
            views=DatasetViews(ctx.db),
            limits=Limits.from_settings(settings),
            quota=Quota(settings.max_datasets_per_user, settings.max_bytes_per_user),
            work_slots=asyncio.Semaphore(settings.max_concurrent_work),
        )

    @property
    def log(self) -> EventLog:
        """The shared event log."""
        return self.ctx.log

    @property
    def blobs(self) -> BlobStore:
        """The bucket."""
        assert self.ctx.blobs is not None, "the dataset service needs the blob store"
        return self.ctx.blobs

    @property
    def producer(self) -> str:
        """This service's name on the events it appends."""
        return self.settings.service_name

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
