"""Running the dataset service in tests and benchmarks, isolated from other runs.

A run gets its own bucket, queue names and scratch folder; :func:`cleanup` removes
them (queues through RabbitMQ's management API, the bucket emptied then deleted)::

    env = dataset_env(mongo_db=auth.mongo_db, bucket=bucket, queue_prefix=prefix, ...)
    ...  # run ``python -m peertrain.dataset`` with ``env``
    cleanup(bucket=bucket, queue_prefix=prefix, mongo_db=auth.mongo_db)
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from pymongo import MongoClient

from peertrain.common.blobs import BlobStore
from peertrain.common.testing import ServiceProcess

from .config import DatasetSettings

__all__ = [
    "GATEWAY_URL",
    "RABBIT_API",
    "DatasetService",
    "cleanup",
    "dataset_env",
    "ensure_bucket",
    "queue_names",
    "running_dataset_service",
]

GATEWAY_URL = "http://127.0.0.1:8080/api/datasets"
RABBIT_API = "http://127.0.0.1:15672/api"
_PURPOSES = ("uploads", "jobs", "projection", "security")


def dataset_env(
    *,
    mongo_db: str,
    bucket: str,
    queue_prefix: str,
    work_dir: Path,
    port: int = 8003,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a dataset service process for one test run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEERTRAIN_")}
    env.update(
        {
            "PEERTRAIN_DATASET_PORT": str(port),
            "PEERTRAIN_DATASET_HOST": "127.0.0.1",
            "PEERTRAIN_DATASET_MONGO_DB": mongo_db,
            "PEERTRAIN_DATASET_S3_BUCKET": bucket,
            "PEERTRAIN_DATASET_QUEUE_PREFIX": queue_prefix,
            "PEERTRAIN_DATASET_WORK_DIR": str(work_dir),
            "PEERTRAIN_DATASET_ENVIRONMENT": "test",
            **(extra or {}),
        }
    )
    return env


def queue_names(queue_prefix: str) -> list[str]:
    """The queues (and dead-letter queues) a service with this prefix declares."""
    names = [f"{queue_prefix}.{p}" for p in _PURPOSES]
    return names + [f"{n}.dlq" for n in names]


async def _bucket(bucket: str, *, delete: bool) -> None:
    config = DatasetSettings(s3_bucket=bucket).blob_store_config()
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


def cleanup(*, bucket: str, queue_prefix: str, mongo_db: str | None = None) -> None:
    """Delete the run's bucket, queues and (if named) the service's own database."""
    asyncio.run(_bucket(bucket, delete=True))
    with httpx.Client(base_url=RABBIT_API, auth=("admin", "admin"), timeout=10) as rabbit:
        for name in queue_names(queue_prefix):
            rabbit.delete(f"/queues/%2F/{quote(name, safe='')}")
    if mongo_db is not None:
        client: MongoClient[dict[str, Any]]
        with MongoClient(DatasetSettings().mongo_url, serverSelectionTimeoutMS=5000) as client:
            client.drop_database(f"{mongo_db}_dataset")


class DatasetService(ServiceProcess):
    """A dataset service process (``python -m peertrain.dataset``) and its log."""

    def __init__(self, env: dict[str, str], log_path: Path, port: int = 8003) -> None:
        super().__init__(
            name="dataset",
            args=["-m", "peertrain.dataset"],
            env=env,
            port=port,
            log_path=log_path,
        )


@contextmanager
def running_dataset_service(
    *,
    mongo_db: str,
    run: str,
    base_dir: Path,
    extra: dict[str, str] | None = None,
    port: int = 8003,
) -> Iterator[tuple[DatasetService, str]]:
    """A dataset service with a bucket and queues of its own; removed afterwards.

    Yields the service and its bucket's name. ``mongo_db`` must be the event log the
    auth service writes to (the service learns token keys from it).
    """
    bucket = f"pt-ds-{run}".lower()[:63]
    prefix = f"dataset-{run}"
    ensure_bucket(bucket)
    env = dataset_env(
        mongo_db=mongo_db,
        bucket=bucket,
        queue_prefix=prefix,
        work_dir=base_dir / f"dataset-work-{run}",
        port=port,
        extra=extra,
    )
    service = DatasetService(env, base_dir / f"dataset-{run}.log", port)
    try:
        service.start()
        yield service, bucket
    finally:
        service.stop()
        cleanup(bucket=bucket, queue_prefix=prefix, mongo_db=mongo_db)
