"""Services as subprocesses: start, wait until ready, stop; the auth service under test."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from pymongo import MongoClient

from peertrain.common.settings import ServiceSettings
from peertrain.testkit.common import (
    GATEWAY,
    PLATFORM_PORTS,
    RABBIT_API,
    ServiceProcess,
    child_env,
    free_port,
    port_in_use,
)

__all__ = [
    "GATEWAY_URL",
    "PROBE_PREFIX",
    "AuthUnderTest",
    "ServiceProcess",
    "auth_process",
    "auth_queue_prefix",
    "delete_auth_queues",
    "free_port",
    "port_in_use",
    "probe_process",
    "shared_auth_service",
]

PROBE_PREFIX = "/probe"
GATEWAY_URL = f"{GATEWAY}/api/auth"


AUTH_PURPOSES = ("audit", "security")
"""What auth's queues are for (``<prefix>.<purpose>``, each with its ``.dlq``)."""


def auth_queue_prefix(mongo_db: str) -> str:
    """The queue prefix of an auth service under test on ``mongo_db``: never the
    platform's ``auth``, whose durable queues a later ``make up`` would consume from."""
    return f"auth-{mongo_db}"


def delete_auth_queues(queue_prefix: str) -> None:
    """Delete the queues of an auth service under test (best effort: the broker may be
    down after a fault test)."""
    names = [f"{queue_prefix}.{p}" for p in AUTH_PURPOSES]
    try:
        with httpx.Client(base_url=RABBIT_API, auth=("admin", "admin"), timeout=10) as rabbit:
            for name in names + [f"{n}.dlq" for n in names]:
                rabbit.delete(f"/queues/%2F/{quote(name, safe='')}")
    except httpx.HTTPError:
        pass


def auth_process(
    *,
    mongo_db: str,
    key_dir: Path,
    admin_password: str,
    log_dir: Path,
    port: int = PLATFORM_PORTS["auth"],
    environment: str = "test",
    extra_env: dict[str, str] | None = None,
) -> ServiceProcess:
    """The auth service on ``port`` with its log and own data in ``mongo_db``, and
    queues of its own (:func:`auth_queue_prefix`; :func:`delete_auth_queues` after)."""
    env = child_env(
        "auth",
        {
            "PEERTRAIN_AUTH_PORT": str(port),
            "PEERTRAIN_AUTH_HOST": "127.0.0.1",
            "PEERTRAIN_AUTH_MONGO_DB": mongo_db,
            "PEERTRAIN_AUTH_QUEUE_PREFIX": auth_queue_prefix(mongo_db),
            "PEERTRAIN_AUTH_ENVIRONMENT": environment,
            "PEERTRAIN_AUTH_SIGNING_KEY_DIR": str(key_dir),
            "PEERTRAIN_AUTH_ADMIN_PASSWORD": admin_password,
            **(extra_env or {}),
        },
    )
    return ServiceProcess(
        "auth", ["-m", "peertrain.auth"], env, port, log_dir / f"auth-{mongo_db}.log"
    )


def probe_process(*, mongo_db: str, log_dir: Path, name: str = "authprobe") -> ServiceProcess:
    """The probe service (another service that only verifies tokens) on a free port."""
    port = free_port()
    args = ["-m", "peertrain.testkit.auth", "probe", "--mongo-db", mongo_db]
    args += ["--port", str(port), "--name", name]
    return ServiceProcess(
        name,
        args,
        child_env(None),
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

SUITE_LIMITS = {
    "PEERTRAIN_AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS": "100000",
    "PEERTRAIN_AUTH_REGISTER_MAX_PER_ADDRESS": "100000",
}
"""Every test reaches the shared service from one address (127.0.0.1, through the
gateway): the per-address limits would refuse the suite itself. The per-username limit
stays at its default; ``tests/stack/test_auth_throttle.py`` restarts the service with
tight per-address limits to test them."""


@contextmanager
def shared_auth_service(*, run_id: str, base_dir: Path) -> Iterator[AuthUnderTest]:
    """One auth service for the tests that ask for it, started on the first request.

    It runs on port 8001 (behind the gateway) with a fresh database
    ``pt_auth_<run_id>``, a fresh key directory and a random admin password, in
    ``test`` mode (so the refusal of unsafe settings is exercised), with per-address
    throttling limits out of the way (:data:`SUITE_LIMITS`). When the last user
    leaves it stops and its databases are dropped (its log stays in ``base_dir``).
    """
    if _shared["service"] is None:
        _shared["starts"] += 1
        base = base_dir / f"auth-{run_id}"
        key_dir = base / f"keys-{_shared['starts']}"
        password = "admin " + secrets.token_urlsafe(18)
        mongo_db = f"pt_auth_{run_id}"
        process = auth_process(
            mongo_db=mongo_db,
            key_dir=key_dir,
            admin_password=password,
            log_dir=base,
            extra_env=SUITE_LIMITS,
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
            delete_auth_queues(auth_queue_prefix(service.mongo_db))
            _drop_databases(service.mongo_db, service.own_db)


def _drop_databases(*names: str) -> None:
    client: MongoClient[dict[str, Any]]
    with MongoClient(ServiceSettings().mongo_url, serverSelectionTimeoutMS=5000) as client:
        for name in names:
            client.drop_database(name)
