"""Helpers for tests and benchmarks: services as subprocesses, and the ports they need."""

from .ports import (
    PLATFORM_PORTS,
    PortBusy,
    PortHolder,
    ensure_port_free,
    free_port,
    platform_services,
    port_holder,
    port_in_use,
)
from .process import ServiceProcess

__all__ = [
    "PLATFORM_PORTS",
    "PortBusy",
    "PortHolder",
    "ServiceProcess",
    "ensure_port_free",
    "free_port",
    "platform_services",
    "port_holder",
    "port_in_use",
]
