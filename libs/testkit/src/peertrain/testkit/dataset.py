"""Running the dataset service in tests and benchmarks, isolated from other runs (see
:mod:`peertrain.testkit.common.isolated`)::

    with running_dataset_service(mongo_db=auth.mongo_db, run=run_id, base_dir=tmp) as (
        service,
        bucket,
    ):
        ...
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from peertrain.testkit.common import GATEWAY, PLATFORM_PORTS, ServiceProcess
from peertrain.testkit.common.isolated import running_service

__all__ = ["GATEWAY_URL", "DatasetService", "running_dataset_service"]

GATEWAY_URL = f"{GATEWAY}/api/datasets"

DatasetService = ServiceProcess
"""A dataset service process (``python -m peertrain.dataset``) and its log."""


def running_dataset_service(
    *,
    mongo_db: str,
    run: str,
    base_dir: Path,
    extra: dict[str, str] | None = None,
    port: int = PLATFORM_PORTS["dataset"],
) -> AbstractContextManager[tuple[ServiceProcess, str]]:
    """A dataset service with a bucket, queues and scratch folder of its own, removed
    afterwards (with its read-model database); yields the process and its bucket."""
    return running_service(
        "dataset",
        mongo_db=mongo_db,
        run=run,
        base_dir=base_dir,
        purposes=("uploads", "jobs", "projection", "security"),
        port=port,
        bucket_prefix="pt-ds",
        extra=extra,
    )
