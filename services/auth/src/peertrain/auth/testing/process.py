"""Services as subprocesses: start, wait until ready, stop; the auth service under test."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
from pymongo import MongoClient

from peertrain.common.settings import ServiceSettings

__all__ = [
    "GATEWAY_URL",
    "PROBE_PREFIX",
    "AuthUnderTest",
    "ServiceProcess",
    "auth_process",
    "free_port",
    "port_in_use",
    "probe_process",
    "shared_auth_service",
]

PROBE_PREFIX = "/probe"
GATEWAY_URL = "http://127.0.0.1:8080/api/auth"


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something listens on ``host:port``."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, timeout: float = 90.0) -> None:
        """Start and wait until ``ready_path`` answers 200."""
        if port_in_use(self.port):
            raise RuntimeError(
                f"{self.name}: port {self.port} is already in use (is the service running "
                "already? `make services-down` stops it)"
            )
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
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: {self.tail()}")
            try:
                if httpx.get(self.base_url + self.ready_path, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.name} did not become ready in {timeout}s: {self.tail()}")

    def stop(self, *, timeout: float = 20.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
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


def _base_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEERTRAIN_")}
    env.update(extra or {})
    return env


def auth_process(
    *,
    mongo_db: str,
    key_dir: Path,
    admin_password: str,
    log_dir: Path,
    port: int = 8001,
    environment: str = "test",
    extra_env: dict[str, str] | None = None,
) -> ServiceProcess:
    """The auth service on ``port`` with its log and own data in ``mongo_db``."""
    env = _base_env(
        {
            "PEERTRAIN_AUTH_PORT": str(port),
            "PEERTRAIN_AUTH_HOST": "127.0.0.1",
            "PEERTRAIN_AUTH_MONGO_DB": mongo_db,
            "PEERTRAIN_AUTH_ENVIRONMENT": environment,
            "PEERTRAIN_AUTH_SIGNING_KEY_DIR": str(key_dir),
            "PEERTRAIN_AUTH_ADMIN_PASSWORD": admin_password,
            **(extra_env or {}),
        }
    )
    return ServiceProcess(
        "auth", ["-m", "peertrain.auth"], env, port, log_dir / f"auth-{mongo_db}.log"
    )


def probe_process(*, mongo_db: str, log_dir: Path, name: str = "authprobe") -> ServiceProcess:
    """The probe service (another service that only verifies tokens) on a free port."""
    port = free_port()
    args = ["-m", "peertrain.auth.testing", "probe", "--mongo-db", mongo_db]
    args += ["--port", str(port), "--name", name]
    return ServiceProcess(
        name,
        args,
        _base_env(None),
        port,
        log_dir / f"{name}-{mongo_db}.log",
        ready_path=f"{PROBE_PREFIX}/readyz",
    )


@dataclass
class AuthUnderTest:
    """A running auth service and what a test needs to know about it."""

    process: ServiceProcess
    mongo_db: str
    key_dir: Path
    log_dir: Path
    admin_username: str
    admin_password: str
    gateway_url: str = GATEWAY_URL

    @property
    def own_db(self) -> str:
        """The auth service's own database (users, sessions, keys, counters)."""
        return f"{self.mongo_db}_auth"

    def private_key_pem(self, kid: str) -> bytes:
        """A signing key's private PEM (tests forge tokens with the real key)."""
        return (self.key_dir / f"{kid}.pem").read_bytes()


_shared: dict[str, Any] = {"service": None, "users": 0, "starts": 0}


@contextmanager
def shared_auth_service(*, run_id: str, base_dir: Path) -> Iterator[AuthUnderTest]:
    """One auth service for the tests that ask for it, started on the first request.

    It runs on port 8001 (behind the gateway) with a fresh database
    ``pt_auth_<run_id>``, a fresh key directory and a random admin password, in
    ``test`` mode (so the refusal of unsafe settings is exercised). When the last user
    leaves it stops and its databases are dropped (its log stays in ``base_dir``).
    """
    if _shared["service"] is None:
        _shared["starts"] += 1
        base = base_dir / f"auth-{run_id}"
        key_dir = base / f"keys-{_shared['starts']}"
        password = "admin " + secrets.token_urlsafe(18)
        mongo_db = f"pt_auth_{run_id}"
        process = auth_process(
            mongo_db=mongo_db, key_dir=key_dir, admin_password=password, log_dir=base
        )
        process.start()
        _shared["service"] = AuthUnderTest(process, mongo_db, key_dir, base, "admin", password)
    _shared["users"] += 1
    try:
        yield _shared["service"]
    finally:
        _shared["users"] -= 1
        if _shared["users"] == 0:
            service: AuthUnderTest = _shared["service"]
            _shared["service"] = None
            service.process.stop()
            _drop_databases(service.mongo_db, service.own_db)


def _drop_databases(*names: str) -> None:
    client: MongoClient[dict[str, Any]]
    with MongoClient(ServiceSettings().mongo_url, serverSelectionTimeoutMS=5000) as client:
        for name in names:
            client.drop_database(name)
