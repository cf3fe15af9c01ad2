"""A key set from another log, on the shared broker, never replaces a service's own.

``make test`` (lane 0) runs its auth services on the broker of the local stack. Their
``auth.keys_rotated`` events are published on ``peertrain.events`` like the platform's,
so they reach the platform's durable ``*.security`` queues while its services are down.
A service used to take such a message for the next key set of its own log when its
``seq`` came next: after ``make test``, ``make demo``'s peers were refused for good
(``unknown signing key``). Here a foreign key set waits in a service's security queue
before it starts, as it did then; tokens auth has just signed must still verify.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote

import aio_pika
import httpx
import pytest
from pymongo import AsyncMongoClient

from peertrain.auth.domain.keys import generate_key
from peertrain.common.bus import EVENTS
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent
from peertrain.common.events.auth import AUTH_KEYS_ROTATED, AUTH_KEYS_STREAM, KeysRotated
from peertrain.common.events.codec import to_message
from peertrain.common.settings import ServiceSettings
from peertrain.testkit.auth import PROBE_PREFIX, AuthUnderTest, probe_process, shared_auth_service
from peertrain.testkit.common import RABBIT_API


@pytest.fixture(scope="module")
def auth(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthUnderTest]:
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as svc:
        yield svc


@pytest.fixture
async def http(auth: AuthUnderTest) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=auth.gateway_url, timeout=30) as client:
        yield client


async def _keys_version(auth: AuthUnderTest) -> int:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(ServiceSettings().mongo_url)
    try:
        return await EventLog(client[auth.mongo_db]).stream_version(AUTH_KEYS_STREAM)
    finally:
        await client.close()


async def _publish_foreign_key_set(seq: int, keys: int) -> set[str]:
    """Another auth's ``auth.keys_rotated`` at ``seq`` of its ``auth:keys``, published as
    its relay would; the foreign key ids."""
    made = [generate_key() for _ in range(keys)]
    data = KeysRotated(keys=tuple(k.jwk for k in made), active_kid=made[0].kid)
    event = NewEvent.of(data, producer="auth").stored_as(AUTH_KEYS_STREAM, seq, 10**9)
    connection = await aio_pika.connect(ServiceSettings().amqp_url.get_secret_value())
    async with connection:
        channel = await connection.channel()
        exchange = await channel.get_exchange(EVENTS.name)
        await exchange.publish(
            aio_pika.Message(
                to_message(event),
                message_id=event.id,
                content_type="application/json",
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                headers={"x-stream": event.stream, "x-seq": event.seq},
            ),
            routing_key=AUTH_KEYS_ROTATED,
        )
    return {k.kid for k in made}


def _delete_queues(*names: str) -> None:
    for name in names:
        httpx.delete(
            f"{RABBIT_API}/queues/%2F/{quote(name, safe='')}", auth=("admin", "admin"), timeout=10
        )


def _messages(queue: str) -> int | None:
    r = httpx.get(
        f"{RABBIT_API}/queues/%2F/{quote(queue, safe='')}", auth=("admin", "admin"), timeout=10
    )
    return int(r.json().get("messages", 0)) if r.status_code == 200 else None


async def _user_token(http: httpx.AsyncClient) -> str:
    name, password = f"u{uuid.uuid4().hex[:12]}", f"pass {uuid.uuid4().hex}"
    r = await http.post("/register", json={"username": name, "password": password})
    assert r.status_code == 201, r.text
    r = await http.post("/token", data={"username": name, "password": password})
    assert r.status_code == 200, r.text
    return str(r.json()["access_token"])


async def _peer_token(http: httpx.AsyncClient, user_token: str) -> str:
    head = {"Authorization": f"Bearer {user_token}"}
    r = await http.post("/peer-enrollments", headers=head)
    assert r.status_code == 201, r.text
    r = await http.post(
        "/peers/enroll", json={"enrollment_token": r.json()["enrollment_token"], "name": "p"}
    )
    assert r.status_code == 201, r.text
    peer = r.json()
    body = {"peer_id": peer["peer_id"], "peer_secret": peer["peer_secret"]}
    r = await http.post("/peers/token", json=body)
    assert r.status_code == 200, r.text
    return str(r.json()["access_token"])


async def test_a_foreign_key_set_waiting_in_the_queue_does_not_replace_the_logs(
    http: httpx.AsyncClient, auth: AuthUnderTest, eventually: Any
) -> None:
    name = f"authprobe-{uuid.uuid4().hex[:8]}"
    queue = f"{name}.security"
    probe = probe_process(mongo_db=auth.mongo_db, log_dir=auth.log_dir, name=name)
    try:
        probe.start()  # declares its durable security queue, as the platform did once
        own_kids = set(httpx.get(f"{probe.base_url}{PROBE_PREFIX}/kids", timeout=30).json())
        probe.stop()  # the platform is down (make down) ...
        version = await _keys_version(auth)
        assert version >= 1 and own_kids
        # ... while another auth on the broker publishes its key set, next in seq
        foreign = await _publish_foreign_key_set(version + 1, keys=4)
        await eventually(lambda: _messages(queue) == 1, timeout=60, what="the foreign set queued")

        probe.start()  # make up: the message is delivered first thing
        base = probe.base_url + PROBE_PREFIX
        await eventually(lambda: _messages(queue) == 0, timeout=60, what="the queue consumed")
        async with httpx.AsyncClient(base_url=base, timeout=30) as other:
            assert set((await other.get("/kids")).json()) == own_kids
            assert not foreign & own_kids
            user = await _user_token(http)  # signed by auth just now
            head = {"Authorization": f"Bearer {user}"}
            assert (await other.get("/whoami", headers=head)).status_code == 200
            peer = await _peer_token(http, user)
            head = {"Authorization": f"Bearer {peer}"}
            assert (await other.get("/peer-only", headers=head)).status_code == 200
    finally:
        probe.stop()
        _delete_queues(queue, f"{queue}.dlq")
