"""Running the aggregator in tests, isolated from other runs (see
:mod:`peertrain.testkit.common.isolated`)::

    with running_aggregator_service(mongo_db=auth.mongo_db, run=run_id, base_dir=tmp) as (
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

__all__ = ["GATEWAY_URL", "running_aggregator_service"]

GATEWAY_URL = f"{GATEWAY}/api/models"


def running_aggregator_service(
    *,
    mongo_db: str,
    run: str,
    base_dir: Path,
    extra: dict[str, str] | None = None,
    port: int = PLATFORM_PORTS["aggregator"],
) -> AbstractContextManager[tuple[ServiceProcess, str]]:
    """An aggregator with a bucket, queues and scratch folder of its own, removed
    afterwards; yields the process and its bucket's name."""
    return running_service(
        "aggregator",
        mongo_db=mongo_db,
        run=run,
        base_dir=base_dir,
        purposes=("jobs", "updates", "security"),
        port=port,
        bucket_prefix="pt-agg",
        extra=extra,
    )
