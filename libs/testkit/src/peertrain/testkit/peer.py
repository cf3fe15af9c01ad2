"""Run real peer runtimes as processes, for stack tests and benchmarks.

::

    peer = PeerProcess.enroll(api, enrollment_token, config_dir=tmp / "p1", log_dir=tmp, name="p1")
    peer.start(interval_s=1)
    peer.kill()                            # SIGKILL; peer.stop() is SIGTERM

A peer on "another machine" runs each of its commands behind ``wrap`` (``ip netns exec
NS``) with ``machine_env`` (its trust store: ``SSL_CERT_FILE``) added. An installed peer
(a wheel in a venv of its own) is run by its ``program`` (``.../bin/peertrain-peer``),
with nothing of the workspace on its path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

__all__ = ["PeerProcess", "announce_body"]


_WORKSPACE = ("PYTHONPATH", "VIRTUAL_ENV")
"""What points a Python process at the workspace's sources (deploy/local/env.sh)."""

_MODULE = (sys.executable, "-m", "peertrain.peer")
"""The workspace's peer: this interpreter and the package's module."""


def _env(extra: dict[str, str], *, installed: bool = False) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PEERTRAIN_") and not (installed and k in _WORKSPACE)
    }
    env.update(extra)
    return env


@dataclass
class PeerProcess:
    """A real ``peertrain-peer`` with its own config directory."""

    config_dir: Path
    log_path: Path
    peer_id: str
    name: str
    wrap: tuple[str, ...] = ()
    """A command prefix for every command of this peer (``ip netns exec NS``)."""
    machine_env: dict[str, str] = field(default_factory=dict)
    """Variables every command of this peer gets."""
    program: tuple[str, ...] = _MODULE
    """The peer's command: the workspace's module, or an installed ``peertrain-peer``."""
    proc: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = field(default=None, repr=False)

    @classmethod
    def enroll(
        cls,
        api: str,
        enrollment_token: str,
        *,
        config_dir: Path,
        log_dir: Path,
        name: str,
        wrap: Sequence[str] = (),
        machine_env: Mapping[str, str] | None = None,
        program: Sequence[str] = _MODULE,
    ) -> PeerProcess:
        """``peertrain-peer enroll`` into ``config_dir`` (``program`` runs it)."""
        peer = cls(config_dir, log_dir, "", name, tuple(wrap), dict(machine_env or {}))
        peer.program = tuple(program)
        done = subprocess.run(  # noqa: S603 (our own interpreter and module)
            peer._command("enroll", "--api", api, "--token", enrollment_token, "--name", name),
            env=peer._env({"PEERTRAIN_PEER_CONFIG_DIR": str(config_dir)}),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"enroll failed: {done.stdout}\n{done.stderr}")
        data = json.loads(done.stdout.strip().splitlines()[-1])
        peer.log_path = log_dir / f"peer-{name}.log"
        peer.peer_id, peer.name = data["peer_id"], data["name"]
        return peer

    def _command(self, *args: str) -> list[str]:
        return [*self.wrap, *self.program, *args]

    def _env(self, extra: Mapping[str, str]) -> dict[str, str]:
        return _env({**self.machine_env, **extra}, installed=self.program != _MODULE)

    def start(
        self,
        *,
        interval_s: float = 1.0,
        reconnect_max_s: float = 2.0,
        script: str | Path | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``peertrain-peer run`` in the background.

        ``script`` runs ``python SCRIPT *args --interval …`` instead (a test's own peer,
        e.g. ``tests/stack/hostile_peer.py``), with the same environment; ``env`` adds
        variables (``PEERTRAIN_*`` ones from the caller's environment are not passed).
        """
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        env = self._env(
            {
                "PEERTRAIN_PEER_CONFIG_DIR": str(self.config_dir),
                "PEERTRAIN_PEER_RECONNECT_MAX_S": str(reconnect_max_s),
                **(env or {}),
            }
        )
        if script is None:
            command = self._command("run", *args, "--interval", str(interval_s))
        else:
            own = [sys.executable, str(script), *args, "--interval", str(interval_s)]
            command = [*self.wrap, *own]
        self.proc = subprocess.Popen(  # noqa: S603 (our own interpreter, a test's script)
            command,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def running(self) -> bool:
        """Whether the process is alive."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, *, timeout: float = 20.0) -> int | None:
        """SIGTERM (the runtime announces it is leaving), then wait; its exit code."""
        return self._end(signal.SIGTERM, timeout)

    def kill(self) -> int | None:
        """SIGKILL: no goodbye."""
        return self._end(signal.SIGKILL, 10)

    def _end(self, sig: signal.Signals, timeout: float) -> int | None:
        code = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
            try:
                code = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait(5)
            self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        return code

    def status(self) -> dict[str, Any]:
        """``peertrain-peer status --json``."""
        done = subprocess.run(  # noqa: S603 (our own interpreter and module)
            self._command("status", "--json"),
            env=self._env({"PEERTRAIN_PEER_CONFIG_DIR": str(self.config_dir)}),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"status failed: {done.stdout}\n{done.stderr}")
        data: dict[str, Any] = json.loads(done.stdout)
        return data

    def tail(self, lines: int = 30) -> str:
        """The end of the runtime's log."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def wait_exit(self, timeout: float) -> int | None:
        """Wait for the process to exit by itself."""
        deadline = time.monotonic() + timeout
        while self.running and time.monotonic() < deadline:
            time.sleep(0.1)
        return None if self.proc is None else self.proc.poll()


def announce_body(
    session: str, seq: int, *, interval_s: float = 5.0, **specs: Any
) -> dict[str, Any]:
    """An ``announce`` as a runtime sends it (plausible specs; ``specs`` override them),
    for tests that publish as a peer."""
    return {
        "session": session,
        "seq": seq,
        "sent_at": time.time(),
        "interval_s": interval_s,
        "specs": {
            "os": "Linux",
            "python_version": "3.11",
            "cpu_model": "x",
            "cpu_cores": 4,
            "cpu_threads": 8,
            "ram_gb": 16.0,
            "disk_free_gb": 100.0,
            "peertrain_version": "0.1.0",
            **specs,
        },
    }
