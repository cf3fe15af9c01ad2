"""Running the aggregator in tests, isolated from other runs.

A run gets its own bucket, queue names and scratch folder; :func:`cleanup` removes
them::

    with running_aggregator_service(mongo_db=auth.mongo_db, run=run_id, base_dir=tmp) as (
        service,
        bucket,
    ):
        ...
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import httpx

from peertrain.common.blobs import BlobStore
from peertrain.common.testing import ServiceProcess

from .config import AggregatorSettings

__all__ = [
    "GATEWAY_URL",
    "AggregatorService",
    "aggregator_env",
    "cleanup",
    "ensure_bucket",
    "queue_names",
    "running_aggregator_service",
]

GATEWAY_URL = "http://127.0.0.1:8080/api/models"
RABBIT_API = "http://127.0.0.1:15672/api"
_PURPOSES = ("jobs", "updates", "security")


def aggregator_env(
    *,
    mongo_db: str,
    bucket: str,
    queue_prefix: str,
    work_dir: Path,
    port: int = 8005,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment of an aggregator process for one test run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEERTRAIN_")}
    env.update(
        {
            "PEERTRAIN_AGGREGATOR_PORT": str(port),
            "PEERTRAIN_AGGREGATOR_HOST": "127.0.0.1",
            "PEERTRAIN_AGGREGATOR_MONGO_DB": mongo_db,
            "PEERTRAIN_AGGREGATOR_S3_BUCKET": bucket,
            "PEERTRAIN_AGGREGATOR_QUEUE_PREFIX": queue_prefix,
            "PEERTRAIN_AGGREGATOR_WORK_DIR": str(work_dir),
            "PEERTRAIN_AGGREGATOR_ENVIRONMENT": "test",
            **(extra or {}),
        }
    )
    return env


def queue_names(queue_prefix: str) -> list[str]:
    """The queues (and dead-letter queues) an aggregator with this prefix declares."""
    names = [f"{queue_prefix}.{p}" for p in _PURPOSES]
    return names + [f"{n}.dlq" for n in names]


async def _bucket(bucket: str, *, delete: bool) -> None:
    async with BlobStore(AggregatorSettings(s3_bucket=bucket).blob_store_config()) as blobs:
        if not delete:
            await blobs.ensure_bucket()
            return
        for prefix in ("jobs/", "models/"):
            await blobs.delete_prefix(prefix)
        await blobs.client.delete_bucket(Bucket=bucket)


def ensure_bucket(bucket: str) -> None:
    """Create ``bucket`` if missing."""
    asyncio.run(_bucket(bucket, delete=False))


def cleanup(*, bucket: str, queue_prefix: str) -> None:
    """Delete the run's bucket and queues."""
    asyncio.run(_bucket(bucket, delete=True))
    with httpx.Client(base_url=RABBIT_API, auth=("admin", "admin"), timeout=10) as rabbit:
        for name in queue_names(queue_prefix):
            rabbit.delete(f"/queues/%2F/{quote(name, safe='')}")


class AggregatorService(ServiceProcess):
    """An aggregator process (``python -m peertrain.aggregator``) and its log."""

    def __init__(self, env: dict[str, str], log_path: Path, port: int = 8005) -> None:
        super().__init__(
            name="aggregator",
            args=["-m", "peertrain.aggregator"],
            env=env,
            port=port,
            log_path=log_path,
        )


@contextmanager
def running_aggregator_service(
    *,
    mongo_db: str,
    run: str,
    base_dir: Path,
    extra: dict[str, str] | None = None,
    port: int = 8005,
) -> Iterator[tuple[AggregatorService, str]]:
    """An aggregator with a bucket and queues of its own; removed afterwards.

    Yields the service and its bucket's name. ``mongo_db`` must be the event log the
    auth service writes to (the service learns token keys from it).
    """
    bucket = f"pt-agg-{run}".lower()[:63]
    prefix = f"aggregator-{run}"
    ensure_bucket(bucket)
    env = aggregator_env(
        mongo_db=mongo_db,
        bucket=bucket,
        queue_prefix=prefix,
        work_dir=base_dir / f"aggregator-work-{run}",
        port=port,
        extra=extra,
    )
    service = AggregatorService(env, base_dir / f"aggregator-{run}.log", port)
    try:
        service.start()
        yield service, bucket
    finally:
        service.stop()
        cleanup(bucket=bucket, queue_prefix=prefix)
