"""Sanity bounds on what a peer claims about its machine.

Specs are self-reported by an untrusted peer. The catalogue's :class:`DeviceSpecs`
only says "not negative" (events already in the log must stay readable); the registry
refuses to record claims beyond what any machine has, or that contradict each other,
so a hostile peer cannot claim a petabyte of RAM to be picked first by every
memory-ranked selection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from peertrain.common.events.peers import DeviceSpecs

__all__ = ["SpecBounds", "spec_problem"]


@dataclass(frozen=True, slots=True)
class SpecBounds:
    """Largest believable values (defaults: well above today's largest single hosts)."""

    max_ram_gb: float = 8192.0
    max_gpu_memory_gb: float = 1024.0
    max_gpus: int = 64
    max_cpu_cores: int = 1024
    max_cpu_threads: int = 4096
    max_disk_free_gb: float = 1_048_576.0


def spec_problem(specs: DeviceSpecs, bounds: SpecBounds) -> str | None:
    """Why ``specs`` are not believable (a short reason), or ``None`` when they are."""
    numbers = {
        "ram_gb": (specs.ram_gb, bounds.max_ram_gb),
        "disk_free_gb": (specs.disk_free_gb, bounds.max_disk_free_gb),
        "cpu_cores": (float(specs.cpu_cores), float(bounds.max_cpu_cores)),
        "cpu_threads": (float(specs.cpu_threads), float(bounds.max_cpu_threads)),
        "gpus": (float(len(specs.gpus)), float(bounds.max_gpus)),
    }
    for i, gpu in enumerate(specs.gpus):
        numbers[f"gpus[{i}].memory_gb"] = (gpu.memory_gb, bounds.max_gpu_memory_gb)
    for name, (value, limit) in numbers.items():
        if not math.isfinite(value) or value < 0 or value > limit:
            return f"{name} out of bounds (0..{limit:g})"
    if specs.cpu_threads and specs.cpu_cores > specs.cpu_threads:
        return "cpu_cores above cpu_threads"
    if specs.device == "cuda" and not specs.gpus:
        return "device cuda without a GPU"
    return None
