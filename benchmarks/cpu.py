"""CPU seconds of the machine's processes, read from ``/proc/<pid>/stat``.

:func:`processes` reads every process once (``make bench-idle``). :class:`CpuSampler`
reads them in a thread a few times a second, so that a window known only afterwards (a
job's rounds, from its events' timestamps) can be cut out of the samples, and says how
many CPU seconds each component of the platform spent in it (``make bench-rounds``).
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from pathlib import Path

__all__ = ["COMPONENTS", "CpuSampler", "component_of", "processes"]

TICK = os.sysconf("SC_CLK_TCK")

COMPONENTS = (
    ("peertrain.orchestrator", "orchestrator"),
    ("peertrain.aggregator", "aggregator"),
    ("peertrain.registry", "registry"),
    ("peertrain.dataset", "dataset"),
    ("peertrain.auth", "auth"),
    ("peertrain.peer", "peers"),
    ("/ferretdb ", "ferretdb"),
    ("postgres", "postgres"),
    ("beam.smp", "rabbitmq"),
    ("erl_child_setup", "rabbitmq"),
    ("epmd", "rabbitmq"),
    ("/minio ", "minio"),
    ("nginx", "gateway"),
    ("prometheus", "prometheus"),
)
"""A process's component: the first of these found in its command line (``other``
when none is)."""


def processes() -> dict[int, tuple[int, int, float]]:
    """Every process now: pid -> (parent, process group, CPU seconds incl. reaped children)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) "
        ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        found[int(entry)] = (int(fields[1]), int(fields[2]), ticks / TICK)
    return found


def component_of(command_line: str) -> str:
    """The component a process belongs to, from its command line."""
    return next((name for mark, name in COMPONENTS if mark in command_line), "other")


def _command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


class CpuSampler:
    """Every process's CPU seconds, sampled in a thread every ``interval_s``.

    A process that starts within a window counts with all its CPU; one that ends within
    it counts up to its last sample (its parent's reaped-children time may count it
    again: nothing the platform runs ends mid-job).
    """

    def __init__(self, interval_s: float = 0.25) -> None:
        self.interval_s = interval_s
        self._times: list[float] = []
        self._samples: list[dict[int, float]] = []
        self._components: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def __enter__(self) -> CpuSampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        now = time.time()
        sample = {pid: cpu for pid, (_, _, cpu) in processes().items()}
        for pid in sample.keys() - self._components.keys():
            self._components[pid] = component_of(_command_line(pid))
        self._times.append(now)
        self._samples.append(sample)

    def between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds per component from the last sample at or before ``start`` (Unix
        time) to the first at or after ``end``; the nearest ones where none is."""
        if not self._times:
            return {}
        first, last = self._span(start, end)
        before, after = self._samples[first], self._samples[last]
        spent: dict[str, float] = {}
        for pid, cpu in after.items():
            component = self._components.get(pid, "other")
            spent[component] = spent.get(component, 0.0) + cpu - before.get(pid, 0.0)
        return spent

    def window_s(self, start: float, end: float) -> float:
        """The seconds :meth:`between` measures for this window."""
        first, last = self._span(start, end)
        return self._times[last] - self._times[first]

    def _span(self, start: float, end: float) -> tuple[int, int]:
        first = max(0, bisect.bisect_right(self._times, start) - 1)
        return first, min(len(self._times) - 1, bisect.bisect_left(self._times, end))
