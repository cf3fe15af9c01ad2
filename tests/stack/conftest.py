"""Fixtures for tests against the real local stack (started by ``make test``).

Everything under ``tests/stack`` is marked ``stack``. Each test session uses its own
database names and queue names, so runs never see each other's data; fault-injection
tests stop and start the real servers through ``deploy/local/stack.sh``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from pymongo import AsyncMongoClient

from peertrain.common.bus import Inbox, Subscriptions, make_broker
from peertrain.common.eventlog import EventLog
from peertrain.common.events import RecordedEvent
from peertrain.common.events.diagnostics import DIAGNOSTIC_PINGED
from peertrain.common.settings import ServiceSettings
from peertrain.testkit.common import RABBIT_API

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the helpers beside the tests (hanging_proxy, ...)
STACK = ROOT / "deploy" / "local" / "stack.sh"
RUN_ID = uuid.uuid4().hex[:8]
MANAGEMENT = RABBIT_API


def stack_ctl(
    action: str, name: str | None = None, *, timeout: float = 300, env: dict[str, str] | None = None
) -> str:
    """Run ``deploy/local/stack.sh ACTION [NAME]`` (with ``env`` added to this process's
    environment) and return its output."""
    cmd = ["bash", str(STACK), action] + ([name] if name else [])
    full = {**os.environ, **env} if env else None
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, check=False, env=full
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stdout}\n{done.stderr}")
    return done.stdout


@pytest.fixture(scope="session")
def run_id() -> str:
    """A short id unique to this test session (for db, collection and queue names)."""
    return RUN_ID


@pytest.fixture(scope="session")
def settings(run_id: str) -> ServiceSettings:
    """Settings pointing at the local stack, with a database of this session's own."""
    return ServiceSettings(
        service_name="test",
        mongo_db=f"pt_test_{run_id}",
        environment="test",
        log_json=False,
    )


@pytest.fixture
def unique() -> Iterator[Callable[[str], str]]:
    """Make a name unique to this test (``unique("q")`` -> ``q.<run>.<rand>``).

    Queues of that name (and their ``.dlq``) are deleted after the test: a test queue
    left bound to a shared event type would collect every later test's events.
    """
    made: list[str] = []

    def make(prefix: str) -> str:
        name = f"{prefix}.{RUN_ID}.{uuid.uuid4().hex[:6]}"
        made.append(name)
        return name

    yield make
    delete_queues([n for name in made for n in (name, f"{name}.dlq")])


def queue_names() -> set[str] | None:
    """The names of every queue on this lane's broker (``None``: it does not answer)."""
    try:
        with httpx.Client(auth=("admin", "admin"), timeout=10) as client:
            r = client.get(f"{MANAGEMENT}/queues/%2F", params={"columns": "name"})
    except httpx.HTTPError:
        return None
    return {q["name"] for q in r.json()} if r.status_code == 200 else None


@pytest.fixture(scope="session", autouse=True)
def no_queue_left_behind() -> Iterator[None]:
    """Delete, at the end of the session, every queue the session made and left.

    Lane 0 runs on the broker of the local stack, where the platform's own services
    run again after ``make test``. A queue a test leaves bound to ``peertrain.events``
    keeps collecting events; one with a platform queue's name (``auth.security``) would
    be consumed by the next ``make up``, test events and all. Fixtures delete what they
    declare; this catches the rest (a fixture that missed a purpose, a test that
    failed half-way), queues expiring on their own included.
    """
    before = queue_names()
    yield
    after = queue_names()
    if before is None or after is None:
        return
    left = sorted(after - before)
    if left:
        delete_queues(left)
        print(f"\nstack tests: deleted {len(left)} queue(s) left behind: {', '.join(left[:20])}")


def delete_queues(names: list[str]) -> None:
    """Delete queues through RabbitMQ's management API (missing ones are fine)."""
    with httpx.Client(auth=("admin", "admin"), timeout=10) as client:
        for name in names:
            # the broker may be down after a fault test: nothing to clean then
            with contextlib.suppress(httpx.HTTPError):
                client.delete(f"{MANAGEMENT}/queues/%2F/{quote(name, safe='')}")


@pytest.fixture
async def mongo(settings: ServiceSettings) -> AsyncIterator[AsyncMongoClient[dict[str, Any]]]:
    """A client on the real MongoDB-wire server."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        settings.mongo_url, tz_aware=True, serverSelectionTimeoutMS=5000
    )
    yield client
    await client.close()


@pytest.fixture
async def event_log(
    mongo: AsyncMongoClient[dict[str, Any]], settings: ServiceSettings, unique: Callable[[str], str]
) -> EventLog:
    """An event log in a collection of this test's own."""
    log = EventLog(mongo[settings.mongo_db], collection=unique("events").replace(".", "_"))
    await log.ensure_indexes()
    return log


@pytest.fixture
async def broker(settings: ServiceSettings) -> AsyncIterator[Any]:
    """A connected (not started) FastStream broker; tests add subscribers, then start it."""
    b = make_broker(settings.amqp_url.get_secret_value(), prefetch_count=64)
    await b.connect()
    yield b
    await b.stop()


async def _eventually(
    check: Callable[[], Any], *, timeout: float = 120, interval: float = 0.2, what: str = ""
) -> Any:
    """Poll ``check`` (sync or async) until it returns a truthy value, or fail."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        last = check()
        if asyncio.iscoroutine(last):
            last = await last
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out waiting for {what or check}: last={last!r}")


@pytest.fixture
def eventually() -> Callable[..., Any]:
    """``await eventually(check, timeout=..., what=...)``: poll until truthy, or fail."""
    return _eventually


@pytest.fixture
def consume(broker: Any) -> Callable[..., Awaitable[None]]:
    """``await consume(queue, handler, inbox=..., delivery_limit=..., observe=...)``: a
    started consumer of the test events (``diagnostic.pinged``) on ``queue``, the
    platform's way."""

    async def start(
        queue: str,
        handler: Callable[[RecordedEvent], Awaitable[None]],
        *,
        inbox: Inbox | None = None,
        delivery_limit: int = 5,
        observe: Callable[[RecordedEvent], None] | None = None,
    ) -> None:
        subs = Subscriptions(delivery_limit=delivery_limit, observe=observe)
        subs.add(queue, [DIAGNOSTIC_PINGED], handler, inbox=inbox)
        await subs.declare(broker)
        subs.attach(broker)
        await broker.start()

    return start


@pytest.fixture(scope="session")
def stack() -> Callable[..., str]:
    """``stack("kill", "rabbitmq")``: drive the real servers (deploy/local/stack.sh)."""
    return stack_ctl


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/stack needs the real stack (the hook sees every item of the
    session, so it picks this folder's own)."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.stack)
