"""Run the registry as a process (behind the gateway), for stack tests and benchmarks.

::

    registry = registry_process(mongo_db=auth.mongo_db, log_dir=tmp, namespace="registry.x")
    registry.start()                       # waits for /readyz
    ...
    registry.stop()

A :class:`~peertrain.testkit.common.ServiceProcess`, like every service's helper in
:mod:`peertrain.testkit`.
"""

from __future__ import annotations

from pathlib import Path

from peertrain.testkit.common import GATEWAY, PLATFORM_PORTS, ServiceProcess, child_env

__all__ = ["GATEWAY", "registry_process"]


def registry_process(
    *,
    mongo_db: str,
    log_dir: Path,
    namespace: str,
    port: int = PLATFORM_PORTS["registry"],
    extra_env: dict[str, str] | None = None,
) -> ServiceProcess:
    """The registry on ``port`` (behind the gateway), sharing the log in ``mongo_db``.

    ``namespace`` names its queues, so that runs sharing one RabbitMQ stay apart.
    """
    env = child_env(
        "registry",
        {
            "PEERTRAIN_REGISTRY_PORT": str(port),
            "PEERTRAIN_REGISTRY_HOST": "127.0.0.1",
            "PEERTRAIN_REGISTRY_MONGO_DB": mongo_db,
            "PEERTRAIN_REGISTRY_ENVIRONMENT": "test",
            "PEERTRAIN_REGISTRY_QUEUE_NAMESPACE": namespace,
            "PEERTRAIN_REGISTRY_RECONNECT_MAX_S": "2",
            **(extra_env or {}),
        },
    )
    return ServiceProcess(
        "registry",
        ["-m", "peertrain.registry"],
        env,
        port,
        log_dir / f"registry-{mongo_db}.log",
        ready_path="/api/registry/readyz",
    )
