"""Peak resident memory of a process and its children, sampled in a thread (the
benchmarks that report a service's ``peak_rss_mb``)."""

from __future__ import annotations

import contextlib
import threading
import time

import psutil

__all__ = ["MiB", "RssSampler"]

MiB = 1024 * 1024


class RssSampler:
    """Peak RSS of a process and its children, sampled in a thread."""

    def __init__(self, pid: int, interval_s: float = 0.02) -> None:
        self.process = psutil.Process(pid)
        self.interval_s = interval_s
        self.peak = 0
        self.phase_peak = 0
        self.phases: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _rss(self) -> int:
        total = int(self.process.memory_info().rss)
        for child in self.process.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += int(child.memory_info().rss)
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                rss = self._rss()
            except psutil.Error:
                return
            self.peak = max(self.peak, rss)
            self.phase_peak = max(self.phase_peak, rss)
            time.sleep(self.interval_s)

    def mark(self, phase: str) -> None:
        """Record the peak since the previous mark as ``phase``'s (MiB)."""
        self.phases[phase] = round(self.phase_peak / MiB, 1)
        self.phase_peak = 0

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
