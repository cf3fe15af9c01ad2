"""Helpers for tests and benchmarks: services as subprocesses, and the ports they need."""

from .lane import GATEWAY, OFFSET, PROMETHEUS, RABBIT_API, child_env, stack_port
from .mlflow_server import MlflowServer, MlflowServerFailed
from .ports import (
    PLATFORM_PORTS,
    PortBusy,
    PortHolder,
    ensure_port_free,
    free_port,
    platform_services,
    port_holder,
    port_in_use,
    scrape_targets_dir,
    scraped,
)
from .process import ServiceProcess

__all__ = [
    "GATEWAY",
    "OFFSET",
    "PLATFORM_PORTS",
    "PROMETHEUS",
    "RABBIT_API",
    "MlflowServer",
    "MlflowServerFailed",
    "PortBusy",
    "PortHolder",
    "ServiceProcess",
    "child_env",
    "ensure_port_free",
    "free_port",
    "platform_services",
    "port_holder",
    "port_in_use",
    "scrape_targets_dir",
    "scraped",
    "stack_port",
]
