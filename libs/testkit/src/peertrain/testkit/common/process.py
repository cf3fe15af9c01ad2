"""Running PeerTrain services as subprocesses in tests and benchmarks.

Start ``python -m ...`` with its own environment and log file, wait until ``/readyz``
answers, stop with SIGTERM (then SIGKILL). Shared by every service's test helpers.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

from .ports import ensure_port_free

__all__ = ["ServiceProcess"]


@dataclass
class ServiceProcess:
    """A service run as ``python -m ...`` with its own environment and log file."""

    name: str
    args: list[str]
    env: dict[str, str]
    port: int
    log_path: Path
    ready_path: str = "/readyz"
    proc: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        """The process id (while running)."""
        assert self.proc is not None
        return self.proc.pid

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, timeout: float = 90.0) -> None:
        """Start and wait until ``ready_path`` answers 200.

        Raises
        ------
        PortBusy
            At once, when the port is taken (by the running platform, or another run):
            the message says who holds it and what stops it.
        """
        ensure_port_free(self.name, self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            [sys.executable, *self.args],
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        # One client for all the polls: an httpx client builds an SSL context when made
        # (about 60 ms of CPU), which a poll every 0.2 s multiplied into seconds a start.
        with httpx.Client(timeout=2) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(
                        f"{self.name} exited with {self.proc.returncode}: {self.tail()}"
                    )
                try:
                    if http.get(self.base_url + self.ready_path).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.name} did not become ready in {timeout}s: {self.tail()}")

    def stop(self, *, timeout: float = 20.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; the exit status (``None`` when it was
        not running). 0 or ``-SIGTERM`` means it shut down by itself: whatever it wrote
        on the way out (a last flush) has landed."""
        code = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
            code = self.proc.returncode
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        return code

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks, nothing flushed (a crash)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def restart(self) -> None:
        """Stop and start again with the same environment."""
        self.stop()
        self.start()

    def tail(self, lines: int = 30) -> str:
        """The end of the service's log."""
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])
