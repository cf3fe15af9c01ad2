"""The dataset service's event subscriptions.

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

from peertrain.common.app import ServiceContext
from peertrain.common.bus import Inbox
from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import DATASET_UPLOADED, DatasetDeleted
from peertrain.common.events.training import JOB_CREATED
from peertrain.dataset.domain.dataset import raw_prefix

from .projections import LIFECYCLE_EVENTS
from .usecases import DatasetContext
from .usecases.shard import shard_for_job
from .usecases.validate import validate_upload

__all__ = ["subscribe"]


def subscribe(ctx: ServiceContext, dctx: DatasetContext) -> None:
    """Register the service's subscriptions on the context."""
    settings = dctx.settings

    async def on_uploaded(event: RecordedEvent) -> None:
        await validate_upload(dctx, event)

    async def on_job_created(event: RecordedEvent) -> None:
        await shard_for_job(dctx, event)

    async def on_lifecycle(event: RecordedEvent) -> None:
        dctx.datasets.observe(event)  # keeps a cached dataset current without a read
        await dctx.views.apply(event)
        if isinstance(event.data, DatasetDeleted):
            await dctx.blobs.delete_prefix(raw_prefix(event.data.dataset_id))

    uploads = settings.queue("uploads")
    jobs = settings.queue("jobs")
    ctx.subscriptions.add(uploads, [DATASET_UPLOADED], on_uploaded, inbox=Inbox(ctx.db, uploads))
    ctx.subscriptions.add(jobs, [JOB_CREATED], on_job_created, inbox=Inbox(ctx.db, jobs))
    ctx.subscriptions.add(settings.queue("projection"), LIFECYCLE_EVENTS, on_lifecycle)
