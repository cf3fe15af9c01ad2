"""A service run for one test or benchmark, isolated from other runs.

The run gets its own bucket, queue names and scratch folder, and everything is removed
afterwards (queues through RabbitMQ's management API, the bucket emptied then deleted,
and the service's own read-model database)::

    with running_service("dataset", mongo_db=auth.mongo_db, run=run_id, base_dir=tmp,
                         purposes=("uploads", "jobs", "projection", "security")) as (
        service,
        bucket,
    ):
        ...

``mongo_db`` must be the event log the auth service writes to (services learn token keys
from it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from pymongo import MongoClient

from peertrain.common.blobs import BlobStore
from peertrain.common.settings import ServiceSettings

from .lane import RABBIT_API, child_env
from .process import ServiceProcess

__all__ = ["RABBIT_API", "delete_bucket", "ensure_bucket", "running_service", "service_env"]


def service_env(
    service: str,
    *,
    mongo_db: str,
    bucket: str,
    queue_prefix: str,
    work_dir: Path,
    port: int,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment of ``python -m peertrain.<service>`` for one run (no other
    ``PEERTRAIN_*`` variable leaks in from the caller's)."""
    prefix = f"PEERTRAIN_{service.upper()}_"
    values = {
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "MONGO_DB": mongo_db,
        "S3_BUCKET": bucket,
        "QUEUE_PREFIX": queue_prefix,
        "WORK_DIR": str(work_dir),
        "ENVIRONMENT": "test",
    }
    return child_env(service, {**{prefix + k: v for k, v in values.items()}, **(extra or {})})


async def _bucket(bucket: str, *, delete: bool) -> None:
    config = ServiceSettings(service_name="test", s3_bucket=bucket).blob_store_config()
    async with BlobStore(config) as blobs:
        if not delete:
            await blobs.ensure_bucket()
            return
        keys = [info.key async for info in blobs.iter_objects("")]
        for start in range(0, len(keys), 1000):
            await blobs.client.delete_objects(
                Bucket=bucket,
                Delete={"Objects": [{"Key": k} for k in keys[start : start + 1000]]},
            )
        uploads = await blobs.client.list_multipart_uploads(Bucket=bucket)
        for upload in uploads.get("Uploads", []):
            await blobs.client.abort_multipart_upload(
                Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"]
            )
        await blobs.client.delete_bucket(Bucket=bucket)


def ensure_bucket(bucket: str) -> None:
    """Create ``bucket`` if missing."""
    asyncio.run(_bucket(bucket, delete=False))


def delete_bucket(bucket: str) -> None:
    """Empty ``bucket`` (objects and unfinished uploads), then delete it."""
    asyncio.run(_bucket(bucket, delete=True))


def _delete_queues(queue_prefix: str, purposes: Sequence[str]) -> None:
    names = [f"{queue_prefix}.{p}" for p in purposes]
    # an instance's own feed queue expires by itself; the feed DLQ the instances share
    # does not (peertrain.common.bus.topology)
    shared = [f"{queue_prefix}.feed.dlq"]
    with httpx.Client(base_url=RABBIT_API, auth=("admin", "admin"), timeout=10) as rabbit:
        for name in names + [f"{n}.dlq" for n in names] + shared:
            rabbit.delete(f"/queues/%2F/{quote(name, safe='')}")


def _drop_own_database(mongo_db: str, service: str) -> None:
    client: MongoClient[dict[str, Any]]
    with MongoClient(ServiceSettings().mongo_url, serverSelectionTimeoutMS=5000) as client:
        client.drop_database(f"{mongo_db}_{service}")


@contextmanager
def running_service(
    service: str,
    *,
    mongo_db: str,
    run: str,
    base_dir: Path,
    purposes: Sequence[str],
    port: int,
    bucket_prefix: str,
    extra: dict[str, str] | None = None,
) -> Iterator[tuple[ServiceProcess, str]]:
    """``python -m peertrain.<service>`` with a bucket, queues (``<service>-<run>.<purpose>``)
    and a scratch folder of its own; yields the process and its bucket's name."""
    bucket = f"{bucket_prefix}-{run}".lower()[:63]
    queue_prefix = f"{service}-{run}"
    ensure_bucket(bucket)
    env = service_env(
        service,
        mongo_db=mongo_db,
        bucket=bucket,
        queue_prefix=queue_prefix,
        work_dir=base_dir / f"{service}-work-{run}",
        port=port,
        extra=extra,
    )
    process = ServiceProcess(
        name=service,
        args=["-m", f"peertrain.{service}"],
        env=env,
        port=port,
        log_path=base_dir / f"{service}-{run}.log",
    )
    try:
        process.start()
        yield process, bucket
    finally:
        process.stop()
        delete_bucket(bucket)
        _delete_queues(queue_prefix, purposes)
        _drop_own_database(mongo_db, service)
