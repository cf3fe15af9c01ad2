"""Device specs detection: OS, CPU, RAM, free disk, GPU (through torch when present).

torch is optional (training arrives with it): without it the device is ``cpu`` and
the GPU fields stay empty.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from peertrain.common.events.peers import PEER_PROTOCOL, DeviceSpecs, GpuSpecs

__all__ = ["cpu_model", "detect_specs", "peertrain_version", "torch_specs"]

GIB = 1024**3


def peertrain_version() -> str:
    """The installed runtime's version."""
    try:
        return metadata.version("peertrain-peer")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def cpu_model() -> str:
    """The CPU's model name, as the OS names it."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()[:200]
    return (platform.processor() or platform.machine() or "unknown")[:200]


def torch_specs(torch: Any | None) -> dict[str, Any]:
    """What torch says about accelerators (``device``, ``gpus``, versions)."""
    if torch is None:
        return {"device": "cpu", "gpus": (), "cuda_version": None, "torch_version": None}
    out: dict[str, Any] = {
        "device": "cpu",
        "gpus": (),
        "cuda_version": getattr(torch.version, "cuda", None),
        "torch_version": str(torch.__version__).split("+")[0][:50],
    }
    try:
        if torch.cuda.is_available():
            gpus = []
            for i in range(torch.cuda.device_count()):
                props = torch.cuda.get_device_properties(i)
                gpus.append(GpuSpecs(name=props.name[:200], memory_gb=props.total_memory / GIB))
            out.update(device="cuda", gpus=tuple(gpus))
        elif getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            out.update(device="mps")
    except Exception:  # a broken driver must not stop the runtime: it trains on CPU
        out.update(device="cpu", gpus=())
    return out


def _import_torch() -> Any | None:
    try:
        import torch  # type: ignore[import-not-found,unused-ignore]
    except Exception:  # not installed, or installed without a working build
        return None
    return torch


def detect_specs(disk_path: Path | None = None) -> DeviceSpecs:
    """This machine's specs (free disk measured where ``disk_path`` lives)."""
    path = disk_path if disk_path is not None and disk_path.exists() else Path.cwd()
    threads = psutil.cpu_count(logical=True) or os.cpu_count() or 0
    cores = psutil.cpu_count(logical=False) or threads
    return DeviceSpecs(
        os=f"{platform.system()} {platform.release()} {platform.machine()}".strip()[:200],
        python_version=platform.python_version(),
        cpu_model=cpu_model(),
        cpu_cores=cores,
        cpu_threads=threads,
        ram_gb=round(psutil.virtual_memory().total / GIB, 2),
        disk_free_gb=round(psutil.disk_usage(str(path)).free / GIB, 1),
        peertrain_version=peertrain_version(),
        protocol=PEER_PROTOCOL,
        **torch_specs(_import_torch()),
    )
