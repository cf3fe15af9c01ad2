"""Hostile telemetry and abusive peers against a real registry (issue 12, holes 7-11).

One auth service, one registry (``max_peers_per_user=4``) and three enrolled
``peertrain-peer run`` processes heartbeating every second, plus a spare peer that is
enrolled but never run (the tests publish with its token and broker user). The tests
run in file order and leave the three honest peers running.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aio_pika
import aiormq
import httpx
import pytest
from aiormq.abc import ChannelFrame
from pamqp.body import ContentBody
from pamqp.commands import Basic
from pamqp.frame import marshal
from pamqp.header import ContentHeader
from pymongo import MongoClient

from peertrain.common.bus import TELEMETRY
from peertrain.common.eventlog import EventLog
from peertrain.common.events import RecordedEvent
from peertrain.common.events.peers import (
    PEER_REMOVED,
    PEER_SPECS_UPDATED,
    PEER_WENT_OFFLINE,
    PeerSpecsUpdated,
    peer_stream,
    telemetry_key,
)
from peertrain.common.security import peer_headers
from peertrain.common.settings import ServiceSettings
from peertrain.testkit.auth import AuthUnderTest, ServiceProcess, shared_auth_service
from peertrain.testkit.common import stack_port
from peertrain.testkit.peer import PeerProcess, announce_body
from peertrain.testkit.registry import GATEWAY, registry_process

from .test_registry import (
    AUTH,
    MGMT,
    REGISTRY,
    _cleanup_broker,
    _enrollment,
    _login,
    _user,
    bearer,
    metric,
    types,
)

AMQP = ServiceSettings().amqp_url.get_secret_value()
INTERVAL_S = 1.0
QUOTA = 4
JUNK = 50_000


@dataclass
class Abuse:
    auth: AuthUnderTest
    registry: ServiceProcess
    namespace: str
    owner_token: str
    owner_id: str
    admin_token: str
    peers: list[PeerProcess]
    spare: PeerProcess
    base: Path
    run_id: str

    @property
    def log_db(self) -> str:
        return self.auth.mongo_db

    def peer_token(self, peer: PeerProcess) -> str:
        data = json.loads((peer.config_dir / "identity.json").read_text())
        r = httpx.post(
            f"{AUTH}/peers/token",
            json={"peer_id": data["peer_id"], "peer_secret": data["peer_secret"]},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        return str(r.json()["access_token"])


@pytest.fixture(scope="module")
def abuse(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Abuse]:
    base = tmp_path_factory.mktemp("registry-abuse")
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as auth:
        namespace = f"registry.abuse{run_id}"
        registry = registry_process(
            mongo_db=auth.mongo_db,
            log_dir=base,
            namespace=namespace,
            extra_env={"PEERTRAIN_REGISTRY_MAX_PEERS_PER_USER": str(QUOTA)},
        )
        client: MongoClient[dict[str, Any]]
        with MongoClient(ServiceSettings().mongo_url) as client:
            client.drop_database(f"{auth.mongo_db}_registry")
        registry.start()
        enrolled: list[PeerProcess] = []
        try:
            owner_token, owner_id = _user(f"abuser{uuid.uuid4().hex[:8]}")
            admin_token = _login(auth.admin_username, auth.admin_password)
            for i in range(4):
                enrolled.append(
                    PeerProcess.enroll(
                        GATEWAY,
                        _enrollment(owner_token),
                        config_dir=base / f"peer{i}",
                        log_dir=base,
                        name=f"abuse-{i}-{run_id}",
                    )
                )
            peers, spare = enrolled[:3], enrolled[3]
            for peer in peers:
                peer.start(interval_s=INTERVAL_S)
            yield Abuse(
                auth,
                registry,
                namespace,
                owner_token,
                owner_id,
                admin_token,
                peers,
                spare,
                base,
                run_id,
            )
        finally:
            for peer in enrolled:
                peer.stop()
            # stopped by itself, it wrote its last flush: nothing is in flight at the drop
            code = registry.stop()
            _cleanup_broker(namespace, [p.peer_id for p in enrolled])
            assert code in (None, 0, -signal.SIGTERM), registry.tail()
            with MongoClient(ServiceSettings().mongo_url) as client:
                client.drop_database(f"{auth.mongo_db}_registry")


@pytest.fixture
async def http() -> Any:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


async def honest_active(http: httpx.AsyncClient, s: Abuse) -> bool:
    r = await http.get(
        f"{REGISTRY}/peers",
        headers=bearer(s.owner_token),
        params={"status": "active", "limit": 1000},
    )
    assert r.status_code == 200, r.text
    return {p["peer_id"] for p in r.json()["items"]} >= {p.peer_id for p in s.peers}


async def peer_events(mongo: Any, s: Abuse, peer_id: str) -> list[RecordedEvent]:
    return await EventLog(mongo[s.log_db]).read_stream(peer_stream(peer_id))


async def offline_events(mongo: Any, s: Abuse) -> int:
    total = 0
    for p in s.peers:
        total += types(await peer_events(mongo, s, p.peer_id)).count(PEER_WENT_OFFLINE)
    return total


async def rejected_total(http: httpx.AsyncClient) -> float:
    return await metric(http, "registry_rejected_heartbeats_total")


def forged_unsigned(token: str, subject: str) -> str:
    """``header.payload.`` of ``token`` with another subject, padded to near the largest
    token accepted (the costliest to check); the signature is left off."""
    head, payload, _ = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = subject
    claims["pad"] = "x" * 5500
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{body}."


async def publish_junk(keys: list[tuple[str, str]], count: int) -> None:
    """``count`` heartbeats on the given ``(peer_id, unsigned token)`` keys, each with a
    signature of fresh random bytes, as fast as this process can frame them."""
    conn = await aiormq.connect(AMQP)
    try:
        channel = await conn.channel(publisher_confirms=False)
        number = channel.number
        body = b'{"session":"junk","seq":1,"sent_at":0,"interval_s":1.0}'
        body_frame = marshal(ContentBody(body), number)
        for i in range(count):
            peer_id, unsigned = keys[i % len(keys)]
            signature = base64.urlsafe_b64encode(os.urandom(256)).rstrip(b"=").decode()
            props = Basic.Properties(headers=dict(peer_headers(unsigned + signature)))
            frame = (
                marshal(
                    Basic.Publish(
                        exchange=TELEMETRY.name, routing_key=telemetry_key(peer_id, "heartbeat")
                    ),
                    number,
                )
                + marshal(ContentHeader(0, len(body), props), number)
                + body_frame
            )
            await conn.write_queue.put(ChannelFrame(payload=frame, should_close=False))
            if i % 1000 == 999:
                await asyncio.sleep(0)  # let the writer drain
        await channel.basic_qos(prefetch_count=1)  # a round trip: every frame is written
    finally:
        await conn.close()


async def publish(token: str, peer_id: str, kind: str, bodies: list[dict[str, Any]]) -> None:
    """Telemetry as the runtime sends it (admin connection: any routing key)."""
    conn = await aio_pika.connect(AMQP)
    try:
        channel = await conn.channel()
        exchange = await channel.get_exchange(TELEMETRY.name, ensure=False)
        for body in bodies:
            await exchange.publish(
                aio_pika.Message(json.dumps(body).encode(), headers=dict(peer_headers(token))),
                routing_key=telemetry_key(peer_id, kind),
            )
    finally:
        await conn.close()


def announce(seq: int, **specs: Any) -> dict[str, Any]:
    return announce_body("abuse", seq, **specs)


async def presence_dlq_depth(http: httpx.AsyncClient, s: Abuse) -> int:
    r = await http.get(f"{MGMT}/queues/%2F/{s.namespace}.presence.dlq", auth=("admin", "admin"))
    return int(r.json().get("messages", 0)) if r.status_code == 200 else 0


# -- tests -----------------------------------------------------------------------------------


async def test_while_50000_junk_heartbeats_arrive_no_honest_peer_goes_offline(
    abuse: Abuse, http: httpx.AsyncClient, mongo: Any, eventually: Any
) -> None:
    s = abuse
    await eventually(lambda: honest_active(http, s), timeout=60, what="3 peers active")
    offline_before = await offline_events(mongo, s)
    rejected_before = await rejected_total(http)
    # Well-formed peer tokens naming the platform's real key, with random signatures:
    # only a full check can refuse one. They ride on the honest peers' own keys.
    template = s.peer_token(s.spare)
    keys = [(p.peer_id, forged_unsigned(template, p.peer_id)) for p in s.peers]
    await publish_junk(keys, JUNK)

    async def all_refused() -> bool:
        return await rejected_total(http) >= rejected_before + JUNK

    await eventually(all_refused, timeout=180, what=f"{JUNK} junk heartbeats refused")
    assert await honest_active(http, s)
    assert await offline_events(mongo, s) == offline_before, "an honest peer went offline"


async def test_unbelievable_specs_are_refused_and_not_dead_lettered(
    abuse: Abuse, http: httpx.AsyncClient, mongo: Any, eventually: Any
) -> None:
    s = abuse
    token, peer_id = s.peer_token(s.spare), s.spare.peer_id
    before = await metric(http, "registry_rejected_telemetry_total", reason="specs_out_of_bounds")
    await publish(token, peer_id, "announce", [announce(1, ram_gb=1e9)])

    async def refused() -> bool:
        now = await metric(http, "registry_rejected_telemetry_total", reason="specs_out_of_bounds")
        return now >= before + 1

    await eventually(refused, timeout=30, what="the announce refused")
    await publish(token, peer_id, "announce", [announce(2, ram_gb=32.0)])  # a sane one

    async def recorded() -> bool:
        events = await peer_events(mongo, s, peer_id)
        return PEER_SPECS_UPDATED in types(events)

    await eventually(recorded, timeout=30, what="the sane specs recorded")
    specs = [
        e.data.specs.ram_gb
        for e in await peer_events(mongo, s, peer_id)
        if isinstance(e.data, PeerSpecsUpdated)
    ]
    assert specs == [32.0]
    assert await presence_dlq_depth(http, s) == 0


async def test_a_peer_over_its_rate_is_counted_and_dropped_never_logged(
    abuse: Abuse, http: httpx.AsyncClient, mongo: Any, eventually: Any
) -> None:
    s = abuse
    token, peer_id = s.peer_token(s.spare), s.spare.peer_id
    hb = "registry_rejected_heartbeats_total"
    tm = "registry_rejected_telemetry_total"
    before_hb = await metric(http, hb, reason="rate_limited")
    before_tm = await metric(http, tm, reason="rate_limited")
    events_before = len(await peer_events(mongo, s, peer_id))
    beats = [
        {"session": "flood", "seq": i, "sent_at": time.time(), "interval_s": 5.0}
        for i in range(300)
    ]
    await publish(token, peer_id, "heartbeat", beats)
    # Announces with specs that change every time: each accepted one would be an event.
    await publish(
        token, peer_id, "announce", [announce(i, ram_gb=float(i + 1)) for i in range(100)]
    )

    async def counted() -> bool:
        return (
            await metric(http, hb, reason="rate_limited") >= before_hb + 200
            and await metric(http, tm, reason="rate_limited") >= before_tm + 50
        )

    await eventually(counted, timeout=60, what="the excess counted as rate_limited")
    appended = len(await peer_events(mongo, s, peer_id)) - events_before
    assert appended <= 60, f"{appended} events appended for one flooding peer"
    assert await presence_dlq_depth(http, s) == 0


async def flood_heartbeats(token: str, peer_id: str, stop: asyncio.Event, per_s: int) -> int:
    """Heartbeats on ``peer_id``'s key with its own valid token, ``per_s`` a second (far
    over its rate), until ``stop``; how many were sent."""
    conn = await aio_pika.connect(AMQP)
    sent = 0
    try:
        channel = await conn.channel(publisher_confirms=False)
        exchange = await channel.get_exchange(TELEMETRY.name, ensure=False)
        headers = dict(peer_headers(token))
        key = telemetry_key(peer_id, "heartbeat")
        while not stop.is_set():
            for _ in range(per_s // 10):
                body = {"session": "flood", "seq": sent, "sent_at": time.time(), "interval_s": 1.0}
                await exchange.publish(
                    aio_pika.Message(json.dumps(body).encode(), headers=headers), routing_key=key
                )
                sent += 1
            await asyncio.sleep(0.1)
    finally:
        await conn.close()
    return sent


async def test_one_peers_heartbeat_flood_never_stops_the_others_being_judged(
    abuse: Abuse, http: httpx.AsyncClient, mongo: Any, eventually: Any
) -> None:
    # Issue 31: one peer at ~60 heartbeats a second paused offline detection for every
    # peer for as long as it flooded. A flood now holds the flooder's judgement only.
    s = abuse
    token, flooder = s.peer_token(s.spare), s.spare.peer_id
    victim = s.peers[-1]
    await eventually(lambda: honest_active(http, s), timeout=60, what="3 peers active")

    async def victim_offline() -> int:
        events = await peer_events(mongo, s, victim.peer_id)
        return types(events).count(PEER_WENT_OFFLINE)

    offline_before = await victim_offline()
    refused_before = await metric(http, "registry_rejected_heartbeats_total", reason="rate_limited")
    stop = asyncio.Event()
    flood = asyncio.create_task(flood_heartbeats(token, flooder, stop, per_s=300))
    try:

        async def flooding() -> bool:
            now = await metric(http, "registry_rejected_heartbeats_total", reason="rate_limited")
            return now >= refused_before + 300

        await eventually(flooding, timeout=60, what="the flood refused by the registry")
        # recognised as a flood (the previous test's may still count as the same one)
        assert await metric(http, "registry_heartbeat_floods_total") >= 1
        await asyncio.to_thread(victim.kill)  # no goodbye: only its silence tells

        async def declared() -> bool:
            return await victim_offline() > offline_before

        await eventually(declared, timeout=90, what="the killed peer declared offline")
        assert not flood.done(), "the flood ended before the verdict: proves nothing"
        assert await honest_active_except(http, s, victim), "an honest peer went offline"
    finally:
        stop.set()
        await flood
        victim.start(interval_s=INTERVAL_S)
    await eventually(lambda: honest_active(http, s), timeout=120, what="3 peers active again")


async def honest_active_except(http: httpx.AsyncClient, s: Abuse, gone: PeerProcess) -> bool:
    r = await http.get(
        f"{REGISTRY}/peers",
        headers=bearer(s.owner_token),
        params={"status": "active", "limit": 1000},
    )
    assert r.status_code == 200, r.text
    active = {p["peer_id"] for p in r.json()["items"]}
    return active >= {p.peer_id for p in s.peers if p is not gone}


async def test_a_user_beyond_the_peer_quota_gets_no_broker_access(
    abuse: Abuse, http: httpx.AsyncClient, eventually: Any
) -> None:
    s = abuse  # the owner has QUOTA registered peers already (3 running + the spare)
    extra = await asyncio.to_thread(
        PeerProcess.enroll,
        GATEWAY,
        _enrollment(s.owner_token),
        config_dir=s.base / "extra",
        log_dir=s.base,
        name=f"abuse-extra-{s.run_id}",
    )
    try:
        token = s.peer_token(extra)

        async def refused() -> bool:
            r = await http.post(
                f"{REGISTRY}/peers/{extra.peer_id}/broker-credentials", headers=bearer(token)
            )
            if r.status_code == 404:  # the registry has not seen the enrollment yet
                return False
            assert r.status_code == 403, r.text
            error = r.json()["error"]
            assert error["code"] == "quota_exceeded" and error["detail"]["limit"] == QUOTA
            return True

        await eventually(refused, timeout=30, what="the fifth peer refused")
        async with httpx.AsyncClient(base_url=MGMT, auth=("admin", "admin")) as mgmt:
            r = await mgmt.get(f"/users/peer-{extra.peer_id}")
            assert r.status_code == 404, "a broker user was made beyond the quota"
    finally:
        _cleanup_broker(s.namespace, [extra.peer_id])


async def test_a_removed_peer_loses_its_broker_login_at_once(
    abuse: Abuse, http: httpx.AsyncClient, mongo: Any, eventually: Any
) -> None:
    s = abuse
    spare, token = s.spare, s.peer_token(s.spare)
    r = await http.post(
        f"{REGISTRY}/peers/{spare.peer_id}/broker-credentials", headers=bearer(token)
    )
    assert r.status_code == 200, r.text
    grant = r.json()
    url = f"amqp://{grant['username']}:{grant['password']}@127.0.0.1:{stack_port(5672)}/"
    live = await aiormq.connect(url)  # the credentials work, and stay connected
    try:
        r = await http.delete(f"{REGISTRY}/peers/{spare.peer_id}", headers=bearer(s.owner_token))
        assert r.status_code == 204, r.text
        # user.disabled travels auth -> log -> relay -> registry, then the management
        # API: give a loaded machine time
        await eventually(lambda: live.is_closed, timeout=120, what="its connection closed")
        with pytest.raises(
            (aiormq.exceptions.ProbableAuthenticationError, aiormq.exceptions.AMQPError)
        ):
            again = await aiormq.connect(url)
            await again.close()
    finally:
        if not live.is_closed:
            await live.close()
    r = await http.get(f"{REGISTRY}/peers/{spare.peer_id}", headers=bearer(s.owner_token))
    assert r.status_code == 404 and r.json()["error"]["code"] == "peer_not_found"
    r = await http.post(
        f"{REGISTRY}/peers/{spare.peer_id}/broker-credentials", headers=bearer(token)
    )
    # refused either way: its token once peer.removed reached the registry's security
    # queue (401), or the peer itself, gone (404) if that event is still on its way
    assert r.status_code in (401, 404), r.text
    assert PEER_REMOVED in types(await peer_events(mongo, s, spare.peer_id))
    # and auth signs it in no more: peer.removed reaches auth's audit queue
    identity = json.loads((spare.config_dir / "identity.json").read_text())
    login = {"peer_id": identity["peer_id"], "peer_secret": identity["peer_secret"]}

    async def refused() -> bool:
        r = await http.post(f"{AUTH}/peers/token", json=login)
        assert r.status_code in (200, 401), r.text
        return r.status_code == 401

    await eventually(refused, timeout=120, what="auth refusing the removed peer a token")


async def test_a_disabled_users_peers_lose_their_broker_users(
    abuse: Abuse, http: httpx.AsyncClient, eventually: Any
) -> None:
    s = abuse
    user_token, user_id = _user(f"doomed{uuid.uuid4().hex[:8]}")
    peer = await asyncio.to_thread(
        PeerProcess.enroll,
        GATEWAY,
        _enrollment(user_token),
        config_dir=s.base / "doomed",
        log_dir=s.base,
        name=f"doomed-{s.run_id}",
    )
    try:
        token = s.peer_token(peer)

        async def granted() -> dict[str, Any] | None:
            r = await http.post(
                f"{REGISTRY}/peers/{peer.peer_id}/broker-credentials", headers=bearer(token)
            )
            return dict(r.json()) if r.status_code == 200 else None

        grant = await eventually(granted, timeout=30, what="broker credentials")
        url = f"amqp://{grant['username']}:{grant['password']}@127.0.0.1:{stack_port(5672)}/"
        live = await aiormq.connect(url)
        r = await http.post(
            f"{AUTH}/users/{user_id}/disable", headers=bearer(s.admin_token), json={"reason": "t"}
        )
        assert r.status_code == 200, r.text
        # user.disabled travels auth -> log -> relay -> registry, then the management
        # API: give a loaded machine time
        await eventually(lambda: live.is_closed, timeout=120, what="its connection closed")
        with pytest.raises(
            (aiormq.exceptions.ProbableAuthenticationError, aiormq.exceptions.AMQPError)
        ):
            again = await aiormq.connect(url)
            await again.close()
    finally:
        _cleanup_broker(s.namespace, [peer.peer_id])
