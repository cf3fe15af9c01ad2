"""A removed peer's token is refused beyond the registry as soon as ``peer.removed``
arrives: here by the aggregator's update consumer, a real service process.

Before, only the registry knew: the peer's token (up to 15 minutes left) still got its
telemetry past every other service's verifier.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aio_pika
import httpx
import pytest

from peertrain.common.bus import TELEMETRY, OutboxRelay, make_broker
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent
from peertrain.common.events.peers import PeerRemoved, peer_stream
from peertrain.common.events.tasks import UpdateAnnounced
from peertrain.common.security import peer_headers
from peertrain.common.settings import ServiceSettings
from peertrain.testkit.aggregator import running_aggregator_service
from peertrain.testkit.auth import AuthUnderTest, shared_auth_service
from peertrain.testkit.common import ServiceProcess

SHA = "0" * 64


@pytest.fixture(scope="module")
def auth(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthUnderTest]:
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as svc:
        yield svc


@pytest.fixture(scope="module")
def aggregator(
    auth: AuthUnderTest, run_id: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServiceProcess, str]]:
    run = f"{run_id}rm"
    with running_aggregator_service(
        mongo_db=auth.mongo_db, run=run, base_dir=tmp_path_factory.getbasetemp()
    ) as (process, _):
        yield process, f"aggregator-{run}.updates"


@pytest.fixture
async def registry(auth: AuthUnderTest, mongo: Any, settings: Any) -> AsyncIterator[EventLog]:
    """The event log, with a relay publishing what this test appends as the registry."""
    log = EventLog(mongo[auth.mongo_db])
    broker = make_broker(settings.amqp_url.get_secret_value())
    await broker.connect()
    relay = OutboxRelay(log, broker, producer="registry")
    relay.start()
    try:
        yield log
    finally:
        await relay.stop()
        await broker.stop()


async def _peer(http: httpx.AsyncClient) -> tuple[str, str]:
    name, password = f"r{uuid.uuid4().hex[:12]}", f"pass {uuid.uuid4().hex}"
    r = await http.post("/register", json={"username": name, "password": password})
    assert r.status_code == 201, r.text
    r = await http.post("/token", data={"username": name, "password": password})
    head = {"Authorization": f"Bearer {r.json()['access_token']}"}
    r = await http.post("/peer-enrollments", headers=head)
    assert r.status_code == 201, r.text
    body = {"enrollment_token": r.json()["enrollment_token"], "name": "to-remove"}
    r = await http.post("/peers/enroll", json=body)
    assert r.status_code == 201, r.text
    creds = r.json()
    r = await http.post(
        "/peers/token", json={"peer_id": creds["peer_id"], "peer_secret": creds["peer_secret"]}
    )
    assert r.status_code == 200, r.text
    return str(creds["peer_id"]), str(r.json()["access_token"])


async def _announce(peer_id: str, token: str) -> None:
    body = UpdateAnnounced(
        task_id="no-such-task",
        job_id="no-such-job",
        round=1,
        attempt=1,
        shard=0,
        key="k",
        sha256=SHA,
        size=1,
        samples=1,
    )
    connection = await aio_pika.connect(ServiceSettings().amqp_url.get_secret_value())
    async with connection:
        channel = await connection.channel()
        exchange = await channel.get_exchange(TELEMETRY.name)
        await exchange.publish(
            aio_pika.Message(body.model_dump_json().encode(), headers=dict(peer_headers(token))),
            routing_key=f"peer.{peer_id}.update",
        )


def _refused(process: ServiceProcess, queue: str, reason: str) -> float:
    text = httpx.get(f"{process.base_url}/metrics", timeout=10).text
    pattern = (
        r'^peertrain_peer_messages_refused_total\{(?=[^}]*queue="'
        + re.escape(queue)
        + r'")(?=[^}]*reason="'
        + re.escape(reason)
        + r'")[^}]*\} (\S+)$'
    )
    found = re.search(pattern, text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def test_a_removed_peers_token_is_refused_by_the_aggregator_at_once(
    auth: AuthUnderTest,
    aggregator: tuple[ServiceProcess, str],
    registry: EventLog,
    eventually: Any,
) -> None:
    process, queue = aggregator
    async with httpx.AsyncClient(base_url=auth.gateway_url, timeout=30) as http:
        peer_id, token = await _peer(http)

    # Enrolled: its update gets past the verifier (and is ignored: no such task).
    async def past_the_verifier() -> bool:
        await _announce(peer_id, token)
        return _refused(process, queue, "ignored") >= 1

    await eventually(past_the_verifier, timeout=120, interval=1, what="the update verified")
    assert _refused(process, queue, "bad_token") == 0

    removed = NewEvent.of(PeerRemoved(peer_id=peer_id), producer="registry", actor=peer_id)
    version = await registry.stream_version(peer_stream(peer_id))
    await registry.append(peer_stream(peer_id), [removed], expected_version=version)

    # Removed: the same token, still minutes from its expiry, is refused.
    async def refused() -> bool:
        await _announce(peer_id, token)
        return _refused(process, queue, "bad_token") >= 1

    await eventually(refused, timeout=120, interval=1, what="the removed peer's token refused")
