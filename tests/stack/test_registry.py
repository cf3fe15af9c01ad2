"""The registry and real peer runtimes on the real stack, through the gateway.

One auth service, one registry (``python -m peertrain.registry`` on port 8002) and
three enrolled ``peertrain-peer run`` processes heartbeating every second. The tests
share them and run in file order; each leaves every peer running and active.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import stat
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aio_pika
import aiormq
import httpx
import pytest
from pymongo import MongoClient

from peertrain.common.bus import PEERS, TELEMETRY
from peertrain.common.eventlog import EventLog
from peertrain.common.events import RecordedEvent
from peertrain.common.events.peers import (
    PEER_REGISTERED,
    PEER_SPECS_UPDATED,
    PEER_WENT_OFFLINE,
    PEER_WENT_ONLINE,
    PeerWentOffline,
    peer_stream,
)
from peertrain.common.security import peer_headers
from peertrain.common.settings import ServiceSettings
from peertrain.testkit.auth import AuthUnderTest, ServiceProcess, shared_auth_service
from peertrain.testkit.common import PLATFORM_PORTS, RABBIT_API, stack_port
from peertrain.testkit.peer import PeerProcess
from peertrain.testkit.registry import GATEWAY, registry_process

REGISTRY = f"{GATEWAY}/api/registry"
AUTH = f"{GATEWAY}/api/auth"
MGMT = RABBIT_API
ADMIN = ("admin", "admin")
INTERVAL_S = 1.0
OUTAGE_S = 7.0
"""How long RabbitMQ stays down in the broker-kill test (issue 31's: about 7 s)."""


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Stack:
    auth: AuthUnderTest
    registry: ServiceProcess
    namespace: str
    owner_token: str
    owner_id: str
    stranger_token: str
    admin_token: str
    peers: list[PeerProcess]
    spare: PeerProcess
    """Enrolled, never run: its broker credentials are the test's own."""
    base: Path

    @property
    def log_db(self) -> str:
        return self.auth.mongo_db

    @property
    def own_db(self) -> str:
        return f"{self.auth.mongo_db}_registry"

    def peer_token(self, peer: PeerProcess) -> str:
        data = json.loads((peer.config_dir / "identity.json").read_text())
        r = httpx.post(
            f"{AUTH}/peers/token",
            json={"peer_id": data["peer_id"], "peer_secret": data["peer_secret"]},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        return str(r.json()["access_token"])


def _user(name: str) -> tuple[str, str]:
    password = f"pass {uuid.uuid4().hex}"
    r = httpx.post(f"{AUTH}/register", json={"username": name, "password": password}, timeout=30)
    assert r.status_code == 201, r.text
    return _login(name, password), str(r.json()["id"])


def _login(name: str, password: str) -> str:
    r = httpx.post(f"{AUTH}/token", data={"username": name, "password": password}, timeout=30)
    assert r.status_code == 200, r.text
    return str(r.json()["access_token"])


def _enrollment(token: str) -> str:
    r = httpx.post(f"{AUTH}/peer-enrollments", headers=bearer(token), timeout=30)
    assert r.status_code == 201, r.text
    return str(r.json()["enrollment_token"])


def _cleanup_broker(namespace: str, peer_ids: list[str]) -> None:
    with httpx.Client(base_url=MGMT, auth=ADMIN, timeout=10) as mgmt:
        for peer_id in peer_ids:
            mgmt.delete(f"/users/{quote('peer-' + peer_id, safe='')}")
            for q in (f"peer.{peer_id}", f"peer.{peer_id}.dlq"):
                mgmt.delete(f"/queues/%2F/{quote(q, safe='')}")
        r = mgmt.get("/queues/%2F", params={"columns": "name"})
        for q in r.json() if r.status_code == 200 else []:
            if q["name"].startswith(namespace + "."):
                mgmt.delete(f"/queues/%2F/{quote(q['name'], safe='')}")


@pytest.fixture(scope="module")
def stack_(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    base = tmp_path_factory.mktemp("registry")
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as auth:
        namespace = f"registry.{run_id}"
        registry = registry_process(mongo_db=auth.mongo_db, log_dir=base, namespace=namespace)
        client: MongoClient[dict[str, Any]]
        with MongoClient(ServiceSettings().mongo_url) as client:  # no read model left over
            client.drop_database(f"{auth.mongo_db}_registry")
        registry.start()
        peers: list[PeerProcess] = []
        spare: PeerProcess | None = None
        try:
            owner_token, owner_id = _user(f"owner{uuid.uuid4().hex[:8]}")
            stranger_token, _ = _user(f"stranger{uuid.uuid4().hex[:8]}")
            admin_token = _login(auth.admin_username, auth.admin_password)
            for i in range(3):
                peer = PeerProcess.enroll(
                    GATEWAY,
                    _enrollment(owner_token),
                    config_dir=base / f"peer{i}",
                    log_dir=base,
                    name=f"peer-{i}-{run_id}",
                )
                peers.append(peer)
            spare = PeerProcess.enroll(
                GATEWAY,
                _enrollment(owner_token),
                config_dir=base / "spare",
                log_dir=base,
                name=f"spare-{run_id}",
            )
            for peer in peers:  # the runtime's own reconnect backoff, as users run it
                peer.start(interval_s=INTERVAL_S, reconnect_max_s=15.0)
            yield Stack(
                auth,
                registry,
                namespace,
                owner_token,
                owner_id,
                stranger_token,
                admin_token,
                peers,
                spare,
                base,
            )
        finally:
            for peer in peers:
                peer.stop()
            _stop_cleanly(registry)  # so no write of it is left in flight
            ids = [p.peer_id for p in [*peers, *([spare] if spare else [])]]
            _cleanup_broker(namespace, ids)
            client: MongoClient[dict[str, Any]]
            with MongoClient(ServiceSettings().mongo_url) as client:
                client.drop_database(f"{auth.mongo_db}_registry")


def _stop_cleanly(registry: ServiceProcess) -> None:
    """Stop the registry and check that it stopped by itself, not killed: it writes its
    read model's last flush before it exits, so nothing it wrote is still in flight and
    its database can be dropped at once."""
    code = registry.stop()
    assert code in (None, 0, -signal.SIGTERM), registry.tail()


@pytest.fixture
async def http() -> Any:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


async def list_peers(http: httpx.AsyncClient, token: str, **params: Any) -> list[dict[str, Any]]:
    """Every peer the list answers, following its pages."""
    found: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        r = await http.get(
            f"{REGISTRY}/peers", headers=bearer(token), params={**params, "offset": offset}
        )
        assert r.status_code == 200, r.text
        found += r.json()["items"]
        offset = r.json()["next_offset"]
    return found


async def peer_events(mongo: Any, s: Stack, peer_id: str) -> list[RecordedEvent]:
    return await EventLog(mongo[s.log_db]).read_stream(peer_stream(peer_id))


def types(events: list[RecordedEvent]) -> list[str]:
    return [e.type for e in events]


async def all_active(http: httpx.AsyncClient, s: Stack) -> bool:
    active = await list_peers(http, s.owner_token, status="active")
    return {p["peer_id"] for p in active} >= {p.peer_id for p in s.peers}


async def metric(http: httpx.AsyncClient, name: str, **labels: str) -> float:
    r = await http.get(f"http://127.0.0.1:{PLATFORM_PORTS['registry']}/metrics")
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = re.compile(rf"^{re.escape(name)}(\{{[^}}]*\}})? ([0-9.e+-]+)$", re.M)
    total = 0.0
    for m in pattern.finditer(r.text):
        if not want or want in (m.group(1) or ""):
            total += float(m.group(2))
    return total


# -- tests -----------------------------------------------------------------------------------


async def test_running_peers_are_listed_active_with_specs_and_queues(
    stack_: Stack, http: httpx.AsyncClient, mongo: Any, eventually: Any
) -> None:
    s = stack_
    await eventually(lambda: all_active(http, s), timeout=60, what="3 peers active")
    listed = {p["peer_id"]: p for p in await list_peers(http, s.owner_token, status="active")}
    for peer in s.peers:
        p = listed[peer.peer_id]
        assert p["queue"] == f"peer.{peer.peer_id}"
        assert p["name"] == peer.name and p["owner_id"] == s.owner_id
        assert p["specs"]["cpu_threads"] >= 1 and p["specs"]["ram_gb"] > 0
        assert p["specs"]["device"] == "cpu" and p["heartbeat_interval_s"] == INTERVAL_S
        assert p["last_seen"] is not None
        events = types(await peer_events(mongo, s, peer.peer_id))
        assert events[:1] == ["peer.enrolled"]
        for t in (PEER_REGISTERED, PEER_SPECS_UPDATED, PEER_WENT_ONLINE):
            assert events.count(t) == 1, events
        assert PEER_WENT_OFFLINE not in events
    # The queue exists, durable and quorum, bound to peertrain.peers with peer.<id>.#.
    peer_id = s.peers[0].peer_id
    async with httpx.AsyncClient(base_url=MGMT, auth=ADMIN) as mgmt:
        q = (await mgmt.get(f"/queues/%2F/peer.{peer_id}")).json()
        assert q["durable"] and q["arguments"]["x-queue-type"] == "quorum"
        assert q["arguments"]["x-dead-letter-exchange"] == "peertrain.dlx"
        bindings = (await mgmt.get(f"/queues/%2F/peer.{peer_id}/bindings")).json()
        assert {(b["source"], b["routing_key"]) for b in bindings} >= {
            (PEERS.name, f"peer.{peer_id}.#")
        }
    # Another user does not see them; the registry says so with a 404, not a 403.
    assert await list_peers(http, s.stranger_token) == []
    r = await http.get(f"{REGISTRY}/peers/{peer_id}", headers=bearer(s.stranger_token))
    assert r.status_code == 404 and r.json()["error"]["code"] == "peer_not_found"
    # ...the admin sees everything, and the peer itself may read its own record.
    admin_ids = {p["peer_id"] for p in await list_peers(http, s.admin_token)}
    assert admin_ids >= {p.peer_id for p in s.peers}
    r = await http.get(f"{REGISTRY}/peers/{peer_id}", headers=bearer(s.peer_token(s.peers[0])))
    assert r.status_code == 200 and r.json()["status"] == "active"
    # The identity is a secret: mode 0600 in a 0700 directory.
    identity = s.peers[0].config_dir / "identity.json"
    assert stat.S_IMODE(identity.stat().st_mode) == 0o600
    assert stat.S_IMODE(identity.parent.stat().st_mode) == 0o700
    # peertrain-peer status shows identity, connection and last heartbeat.
    status = await asyncio.to_thread(s.peers[0].status)
    assert status["peer_id"] == peer_id and status["running"] and status["state"] == "connected"
    assert status["last_heartbeat_at"] and status["heartbeats_sent"] >= 1
    assert status["queue"] == f"peer.{peer_id}"


async def test_killed_peer_goes_offline_and_comes_back_online(
    stack_: Stack, http: httpx.AsyncClient, mongo: Any, eventually: Any
) -> None:
    s = stack_
    victim = s.peers[0]
    await eventually(lambda: all_active(http, s), timeout=60, what="all active")
    judged_before = await metric(http, "registry_catch_up_wait_seconds_count")
    await asyncio.to_thread(victim.kill)

    async def offline() -> bool:
        events = await peer_events(mongo, s, victim.peer_id)
        return PEER_WENT_OFFLINE in types(events)

    await eventually(offline, timeout=30, what="peer.went_offline")
    events = await peer_events(mongo, s, victim.peer_id)
    gone = next(e for e in events if e.type == PEER_WENT_OFFLINE)
    assert isinstance(gone.data, PeerWentOffline) and gone.data.reason == "missed_heartbeats"
    r = await http.get(f"{REGISTRY}/peers/{victim.peer_id}", headers=bearer(s.owner_token))
    assert r.json()["status"] == "offline"
    # judged only once a marker came back through the heartbeat queue (nothing waiting)
    assert await metric(http, "registry_catch_up_wait_seconds_count") > judged_before
    online_before = types(events).count(PEER_WENT_ONLINE)

    victim.start(interval_s=INTERVAL_S)

    async def online_again() -> bool:
        events = await peer_events(mongo, s, victim.peer_id)
        return types(events).count(PEER_WENT_ONLINE) > online_before

    await eventually(online_again, timeout=60, what="peer.went_online again")
    await eventually(lambda: all_active(http, s), timeout=30, what="all active again")


async def test_sigterm_announces_leaving(
    stack_: Stack, http: httpx.AsyncClient, mongo: Any, eventually: Any
) -> None:
    s = stack_
    peer = s.peers[1]
    await eventually(lambda: all_active(http, s), timeout=60, what="all active")
    try:
        # clean exit (the wait is long: a loaded 2-core machine can take seconds to end
        # a process that has torch loaded)
        assert await asyncio.to_thread(peer.stop, timeout=90) == 0

        async def left() -> bool:
            events = await peer_events(mongo, s, peer.peer_id)
            return any(
                isinstance(e.data, PeerWentOffline) and e.data.reason == "left" for e in events
            )

        await eventually(left, timeout=30, what="went_offline (left)")
        status = await asyncio.to_thread(peer.status)
        assert not status["running"] and status["state"] == "stopped"
    finally:  # the tests after this one share the peers
        peer.start(interval_s=INTERVAL_S)
    await eventually(lambda: all_active(http, s), timeout=60, what="all active again")


async def test_a_message_on_its_queue_is_accepted_and_handed_to_the_worker(
    stack_: Stack, http: httpx.AsyncClient, eventually: Any
) -> None:
    s = stack_
    peer = s.peers[2]
    await eventually(lambda: all_active(http, s), timeout=60, what="all active")
    before = (await asyncio.to_thread(peer.status))["tasks_received"]
    conn = await aio_pika.connect(ServiceSettings().amqp_url.get_secret_value())
    async with conn:
        channel = await conn.channel()
        exchange = await channel.get_exchange(PEERS.name, ensure=False)
        await exchange.publish(
            aio_pika.Message(b'{"type": "task", "job_id": "j1"}'),
            routing_key=f"peer.{peer.peer_id}.task",
            mandatory=True,
        )

    async def accepted() -> bool:
        status = await asyncio.to_thread(peer.status)
        return bool(status["tasks_received"] > before and "work item received" in peer.tail(50))

    await eventually(accepted, timeout=30, what="task accepted by the worker")
    async with httpx.AsyncClient(base_url=MGMT, auth=ADMIN) as mgmt:

        async def acked() -> bool:
            q = (await mgmt.get(f"/queues/%2F/peer.{peer.peer_id}")).json()
            return q.get("messages") == 0

        await eventually(acked, timeout=30, what="the message acknowledged")
    assert (await asyncio.to_thread(peer.status))["state"] == "connected"


async def test_a_heartbeat_with_another_peers_token_is_rejected_and_counted(
    stack_: Stack, http: httpx.AsyncClient, eventually: Any
) -> None:
    s = stack_
    a, b = s.peers[0], s.peers[1]
    token_a = s.peer_token(a)
    before_wrong = await metric(http, "registry_rejected_heartbeats_total", reason="wrong_peer")
    before_bad = await metric(http, "registry_rejected_heartbeats_total", reason="invalid_token")
    # Sent with admin rights on purpose: the broker would refuse this routing key to A's
    # own user (tested below); the registry must refuse it too, on its own.
    body = b'{"session":"forged","seq":1,"sent_at":0,"interval_s":1.0}'  # valid shape
    conn = await aio_pika.connect(ServiceSettings().amqp_url.get_secret_value())
    try:
        channel = await conn.channel()
        exchange = await channel.get_exchange(TELEMETRY.name, ensure=False)
        for headers in (peer_headers(token_a), peer_headers("not-a-token")):
            await exchange.publish(
                aio_pika.Message(body, headers=dict(headers)),
                routing_key=f"peer.{b.peer_id}.heartbeat",
            )
    finally:
        await conn.close()

    async def counted() -> bool:
        wrong = await metric(http, "registry_rejected_heartbeats_total", reason="wrong_peer")
        bad = await metric(http, "registry_rejected_heartbeats_total", reason="invalid_token")
        return wrong >= before_wrong + 1 and bad >= before_bad + 1

    await eventually(counted, timeout=30, what="rejections counted")


async def _refused(action: Callable[[], Any]) -> str:
    try:
        await action()
    except (aiormq.exceptions.ChannelAccessRefused, aiormq.exceptions.AMQPError) as exc:
        assert "ACCESS_REFUSED" in str(exc) or isinstance(
            exc, aiormq.exceptions.ChannelAccessRefused
        ), repr(exc)
        return repr(exc)
    raise AssertionError("the broker allowed it")


async def test_peer_broker_credentials_allow_only_its_own_queue_and_telemetry(
    stack_: Stack, http: httpx.AsyncClient, eventually: Any
) -> None:
    s = stack_
    spare, other = s.spare, s.peers[2]
    spare_token = s.peer_token(spare)
    # Only the peer itself gets its credentials.
    r = await http.post(
        f"{REGISTRY}/peers/{other.peer_id}/broker-credentials", headers=bearer(spare_token)
    )
    assert r.status_code == 403, r.text
    r = await http.post(
        f"{REGISTRY}/peers/{spare.peer_id}/broker-credentials", headers=bearer(s.owner_token)
    )
    assert r.status_code == 403, r.text
    r = await http.post(
        f"{REGISTRY}/peers/{spare.peer_id}/broker-credentials", headers=bearer(spare_token)
    )
    assert r.status_code == 200, r.text
    creds = r.json()
    assert creds["queue"] == f"peer.{spare.peer_id}"
    url = (
        f"amqp://{quote(creds['username'], safe='')}:{quote(creds['password'], safe='')}"
        f"@127.0.0.1:{stack_port(5672)}/"
    )

    async def fresh_channel() -> tuple[Any, Any]:
        conn = await aio_pika.connect(url)
        return conn, await conn.channel()

    # Allowed: publish its own telemetry; consume its own queue (and get its tasks).
    conn, channel = await fresh_channel()
    try:
        telemetry = await channel.get_exchange(TELEMETRY.name, ensure=False)
        await telemetry.publish(
            aio_pika.Message(b"{}"), routing_key=f"peer.{spare.peer_id}.metrics"
        )
        own = await channel.get_queue(creds["queue"], ensure=False)
        admin = await aio_pika.connect(ServiceSettings().amqp_url.get_secret_value())
        async with admin:
            admin_channel = await admin.channel()
            peers_exchange = await admin_channel.get_exchange(PEERS.name, ensure=False)
            await peers_exchange.publish(
                aio_pika.Message(b'{"type":"probe"}'), routing_key=f"peer.{spare.peer_id}.task"
            )

        async def got_it() -> bool:
            message = await own.get(fail=False)
            if message is None:
                return False
            await message.ack()
            return message.body == b'{"type":"probe"}'

        await eventually(got_it, timeout=20, what="own task message")
    finally:
        await conn.close()

    refusals: dict[str, str] = {}

    async def attempt(name: str, action: Callable[[Any], Any]) -> None:
        conn, channel = await fresh_channel()
        try:
            refusals[name] = await _refused(lambda: action(channel))
        finally:
            await conn.close()

    async def consume_other(channel: Any) -> None:
        queue = await channel.get_queue(f"peer.{other.peer_id}", ensure=False)

        async def ignore(message: Any) -> None:
            return None

        await queue.consume(ignore)

    async def bind_everything(channel: Any) -> None:
        queue = await channel.get_queue(creds["queue"], ensure=False)
        await queue.bind(PEERS.name, routing_key="#")

    async def publish_events(channel: Any) -> None:
        confirmed = await channel.get_exchange("peertrain.events", ensure=False)
        await confirmed.publish(aio_pika.Message(b"{}"), routing_key="job.created")
        await channel.get_queue(creds["queue"], ensure=False)  # the refusal arrives async

    async def publish_as_other(channel: Any) -> None:
        exchange = await channel.get_exchange(TELEMETRY.name, ensure=False)
        await exchange.publish(
            aio_pika.Message(b"{}"), routing_key=f"peer.{other.peer_id}.heartbeat"
        )
        await channel.get_queue(creds["queue"], ensure=False)

    async def declare_queue(channel: Any) -> None:
        await channel.declare_queue(f"peer.{spare.peer_id}.mine", durable=False)

    await attempt("consume another peer's queue", consume_other)
    await attempt("bind # on peertrain.peers", bind_everything)
    await attempt("publish to peertrain.events", publish_events)
    await attempt("publish telemetry as another peer", publish_as_other)
    await attempt("declare a queue", declare_queue)
    assert len(refusals) == 5, refusals


async def test_registry_survives_a_rabbitmq_kill(
    stack_: Stack,
    http: httpx.AsyncClient,
    mongo: Any,
    eventually: Any,
    stack: Callable[..., str],
) -> None:
    s = stack_
    await eventually(lambda: all_active(http, s), timeout=60, what="all active")
    registry_pid = s.registry.proc.pid if s.registry.proc else None
    peer_pids = [p.proc.pid for p in s.peers if p.proc]
    reconnects = [(await asyncio.to_thread(p.status))["reconnects"] for p in s.peers]
    offline_before = [
        types(await peer_events(mongo, s, p.peer_id)).count(PEER_WENT_OFFLINE) for p in s.peers
    ]
    await asyncio.to_thread(stack, "kill", "rabbitmq")

    async def blind() -> bool:  # the registry knows it cannot hear (issue 31)
        return await metric(http, "registry_liveness_paused") == 1

    await eventually(blind, timeout=30, what="liveness paused while the broker is away")
    await asyncio.sleep(OUTAGE_S)  # the outage itself (peers knock meanwhile), not a wait
    await asyncio.to_thread(stack, "start", "rabbitmq")
    back = datetime.now(UTC)

    async def heard_again() -> bool:
        # Fresh heartbeats, consumed after the restart: a registry that stayed blind
        # would still call the peers active (liveness is paused), but not seen since.
        peers = await list_peers(http, s.owner_token, status="active")
        seen = {p["peer_id"]: datetime.fromisoformat(p["last_seen"]) for p in peers}
        return all(p.peer_id in seen and seen[p.peer_id] > back for p in s.peers)

    await eventually(heard_again, timeout=120, what="heartbeats consumed after the restart")
    assert await metric(http, "registry_telemetry_connected") == 1
    # Nobody was restarted: the same processes came back by themselves.
    assert s.registry.proc is not None and s.registry.proc.pid == registry_pid
    assert [p.proc.pid for p in s.peers if p.proc] == peer_pids
    assert await metric(http, "registry_liveness_paused") == 0
    for peer, before in zip(s.peers, reconnects, strict=True):
        status = await asyncio.to_thread(peer.status)
        assert status["running"] and status["state"] == "connected"
        assert status["reconnects"] > before
    # The platform's own outage counted against nobody: no peer went offline for it.
    offline_after = [
        types(await peer_events(mongo, s, p.peer_id)).count(PEER_WENT_OFFLINE) for p in s.peers
    ]
    assert offline_after == offline_before, "a peer was declared offline for the broker's outage"


async def test_a_deleted_heartbeat_queue_is_declared_again_and_blames_no_peer(
    stack_: Stack, http: httpx.AsyncClient, mongo: Any, eventually: Any
) -> None:
    # The broker cancels the consumer of a deleted queue and keeps the channel open:
    # the registry hears nothing, and must know it (issue 31: blind, not "all silent").
    s = stack_
    await eventually(lambda: all_active(http, s), timeout=60, what="all active")
    offline_before = [
        types(await peer_events(mongo, s, p.peer_id)).count(PEER_WENT_OFFLINE) for p in s.peers
    ]
    queue = quote(f"{s.namespace}.heartbeats", safe="")
    async with httpx.AsyncClient(base_url=MGMT, auth=ADMIN, timeout=10) as mgmt:
        r = await mgmt.delete(f"/queues/%2F/{queue}")
        assert r.status_code == 204, r.text
        gone = datetime.now(UTC)

        async def consumed_again() -> bool:
            r = await mgmt.get(f"/queues/%2F/{queue}")
            return r.status_code == 200 and int(r.json().get("consumers") or 0) == 1

        await eventually(consumed_again, timeout=60, what="the queue declared and consumed")

    async def heard_again() -> bool:
        peers = await list_peers(http, s.owner_token, status="active")
        seen = {p["peer_id"]: datetime.fromisoformat(p["last_seen"]) for p in peers}
        return all(p.peer_id in seen and seen[p.peer_id] > gone for p in s.peers)

    await eventually(heard_again, timeout=60, what="heartbeats heard again")
    offline_after = [
        types(await peer_events(mongo, s, p.peer_id)).count(PEER_WENT_OFFLINE) for p in s.peers
    ]
    assert offline_after == offline_before, "a peer was declared offline for the lost queue"


async def test_settings_sharing_and_selection(
    stack_: Stack, http: httpx.AsyncClient, eventually: Any
) -> None:
    s = stack_
    await eventually(lambda: all_active(http, s), timeout=60, what="all active")
    owner, stranger = bearer(s.owner_token), bearer(s.stranger_token)
    first, second = s.peers[0].peer_id, s.peers[1].peer_id

    r = await http.patch(f"{REGISTRY}/peers/{first}", headers=owner, json={"shared": True})
    assert r.status_code == 200 and r.json()["shared"] is True, r.text
    assert [p["peer_id"] for p in await list_peers(http, s.stranger_token)] == [first]
    r = await http.patch(f"{REGISTRY}/peers/{first}", headers=stranger, json={"disabled": True})
    assert r.status_code == 403 and r.json()["error"]["code"] == "not_your_peer"
    r = await http.patch(f"{REGISTRY}/peers/{first}", headers=owner, json={})
    assert r.status_code == 422

    r = await http.post(f"{REGISTRY}/selections", headers=owner, json={"count": 3})
    assert r.status_code == 200, r.text
    chosen = r.json()
    assert {c["peer_id"] for c in chosen} == {p.peer_id for p in s.peers}
    assert all(c["queue"] == f"peer.{c['peer_id']}" and c["specs"] for c in chosen)

    r = await http.patch(f"{REGISTRY}/peers/{second}", headers=owner, json={"disabled": True})
    assert r.status_code == 200 and r.json()["disabled"] is True
    r = await http.post(f"{REGISTRY}/selections", headers=owner, json={"count": 3})
    assert r.status_code == 409 and r.json()["error"]["code"] == "not_enough_peers"
    assert r.json()["error"]["detail"] == {"requested": 3, "available": 2}
    r = await http.post(
        f"{REGISTRY}/selections",
        headers=owner,
        json={"count": 2, "prefer": "random", "seed": 7, "filters": {"device": "cpu"}},
    )
    assert r.status_code == 200 and second not in {c["peer_id"] for c in r.json()}
    r = await http.post(
        f"{REGISTRY}/selections", headers=owner, json={"count": 1, "filters": {"device": "cuda"}}
    )
    assert r.status_code == 409
    r = await http.post(f"{REGISTRY}/selections", headers=stranger, json={"count": 1})
    assert r.status_code == 200 and [c["peer_id"] for c in r.json()] == [first]
    r = await http.patch(f"{REGISTRY}/peers/{second}", headers=owner, json={"disabled": False})
    assert r.status_code == 200 and r.json()["disabled"] is False


def _read_model(s: Stack) -> list[dict[str, Any]]:
    client: MongoClient[dict[str, Any]]
    with MongoClient(ServiceSettings().mongo_url, tz_aware=True) as client:
        docs = list(client[s.own_db]["peers"].find({}))
    return sorted(docs, key=lambda d: d["_id"])


def _stored_is_current(s: Stack) -> bool:
    """Whether the registry's stored read model holds every peer event of the log: its
    checkpoint has reached the last event of a ``peer:<id>`` stream."""
    client: MongoClient[dict[str, Any]]
    with MongoClient(ServiceSettings().mongo_url) as client:
        peer_events = {"stream": {"$regex": "^peer:"}}
        events: list[dict[str, Any]] = list(client[s.log_db]["events"].find(peer_events))
        last = max(e["position"] for e in events)
        checkpoint = client[s.own_db]["meta"].find_one({"_id": "checkpoint"})
    return checkpoint is not None and checkpoint["position"] >= last


def _stable(peers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    drop = {"status", "last_seen"}
    return sorted(({k: v for k, v in p.items() if k not in drop} for p in peers), key=str)


async def test_read_model_dropped_and_replayed_gives_the_same_peers(
    stack_: Stack, http: httpx.AsyncClient, eventually: Any
) -> None:
    s = stack_
    await eventually(lambda: all_active(http, s), timeout=60, what="all active")
    before = await list_peers(http, s.admin_token)
    await eventually(lambda: asyncio.to_thread(_stored_is_current, s), what="flushed")
    stored = await asyncio.to_thread(_read_model, s)
    assert {d["_id"] for d in stored} >= {p.peer_id for p in s.peers}

    # 1. A running registry, through the API (admin only).
    r = await http.post(f"{REGISTRY}/admin/replay", headers=bearer(s.owner_token))
    assert r.status_code == 403
    r = await http.post(f"{REGISTRY}/admin/replay", headers=bearer(s.admin_token))
    assert r.status_code == 200 and r.json()["peers"] == len(stored), r.text
    assert _stable(await list_peers(http, s.admin_token)) == _stable(before)
    assert await asyncio.to_thread(_read_model, s) == stored

    # 2. A stopped registry: its database dropped, rebuilt by the CLI, then started.
    await asyncio.to_thread(_stop_cleanly, s.registry)
    client: MongoClient[dict[str, Any]]
    with MongoClient(ServiceSettings().mongo_url) as client:
        client.drop_database(s.own_db)
    done = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "peertrain.registry", "replay"],
        env=s.registry.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await done.communicate()
    assert done.returncode == 0, out.decode()
    assert await asyncio.to_thread(_read_model, s) == stored
    await asyncio.to_thread(s.registry.start)
    assert _stable(await list_peers(http, s.admin_token)) == _stable(before)
    await eventually(lambda: all_active(http, s), timeout=60, what="all active after restart")
