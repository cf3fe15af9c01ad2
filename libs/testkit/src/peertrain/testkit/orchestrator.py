"""Run the orchestrator as a process (behind the gateway), for stack tests and benchmarks."""

from __future__ import annotations

from pathlib import Path

from peertrain.testkit.common import PLATFORM_PORTS, ServiceProcess, child_env

__all__ = ["orchestrator_process"]


def orchestrator_process(
    *,
    mongo_db: str,
    log_dir: Path,
    queue_prefix: str,
    port: int = PLATFORM_PORTS["orchestrator"],
    extra_env: dict[str, str] | None = None,
) -> ServiceProcess:
    """The orchestrator on ``port``, sharing the log in ``mongo_db``."""
    env = child_env(
        "orchestrator",
        {
            "PEERTRAIN_ORCHESTRATOR_PORT": str(port),
            "PEERTRAIN_ORCHESTRATOR_HOST": "127.0.0.1",
            "PEERTRAIN_ORCHESTRATOR_MONGO_DB": mongo_db,
            "PEERTRAIN_ORCHESTRATOR_ENVIRONMENT": "test",
            "PEERTRAIN_ORCHESTRATOR_QUEUE_PREFIX": queue_prefix,
            **(extra_env or {}),
        },
    )
    return ServiceProcess(
        "orchestrator",
        ["-m", "peertrain.orchestrator"],
        env,
        port,
        log_dir / f"orchestrator-{mongo_db}.log",
        ready_path="/api/jobs/readyz",
    )
