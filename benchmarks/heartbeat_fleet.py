"""The heartbeat benchmark's load (see heartbeats.py): a throw-away log of online
peers and their tokens, the fleet that heartbeats for them, the junk publisher, and
the queue prefilled before the registry starts."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import time
import uuid
from typing import Any

import aiormq
import httpx
from aiormq.abc import ChannelFrame
from jose import jwk, jwt
from pamqp.body import ContentBody
from pamqp.commands import Basic
from pamqp.frame import marshal
from pamqp.header import ContentHeader
from pymongo import AsyncMongoClient

from peertrain.auth.domain.keys import generate_key
from peertrain.auth.domain.tokens import access_claims
from peertrain.common.bus import TELEMETRY
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent, RecordedEvent, to_document
from peertrain.common.events.auth import AUTH_KEYS_STREAM, KeysRotated
from peertrain.common.events.peers import (
    PeerEnrolled,
    PeerRegistered,
    PeerWentOnline,
    peer_queue,
    peer_stream,
    telemetry_key,
)
from peertrain.common.security import (
    ACCESS_TOKEN_TYPE,
    DEFAULT_AUDIENCE,
    DEFAULT_ISSUER,
    peer_headers,
)
from peertrain.common.settings import ServiceSettings
from peertrain.testkit.common import RABBIT_API

AMQP = ServiceSettings().amqp_url.get_secret_value()
MONGO = ServiceSettings().mongo_url
MGMT = RABBIT_API  # this lane's (PEERTRAIN_PORT_OFFSET)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- setup ---------------------------------------------------------------------------------


async def seed_log(db_name: str, peers: list[str], owner: str, interval_s: float, key: Any) -> None:
    """The signing key, and every peer enrolled, registered and online, in a fresh log."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(MONGO, tz_aware=True)
    try:
        event_log = EventLog(client[db_name])
        await event_log.ensure_indexes()
        await event_log.append(
            AUTH_KEYS_STREAM,
            [NewEvent.of(KeysRotated(keys=(key.jwk,), active_kid=key.kid), producer="auth")],
            expected_version=0,
        )
        positions = iter(await event_log.positions.allocate(3 * len(peers)))
        docs: list[dict[str, Any]] = []
        for peer_id in peers:
            payloads = (
                PeerEnrolled(peer_id=peer_id, owner_id=owner, name="bench"),
                PeerRegistered(
                    peer_id=peer_id, owner_id=owner, name="bench", queue=peer_queue(peer_id)
                ),
                PeerWentOnline(peer_id=peer_id, interval_s=interval_s),
            )
            for seq, data in enumerate(payloads, start=1):
                new = NewEvent.of(data, producer="bench")
                recorded = RecordedEvent(
                    **new.model_dump(exclude={"data"}),
                    data=data,
                    stream=peer_stream(peer_id),
                    seq=seq,
                    position=next(positions),
                )
                docs.append(to_document(recorded))
        for start in range(0, len(docs), 2000):
            await event_log.events.insert_many(docs[start : start + 2000], ordered=False)
    finally:
        await client.close()


def sign_tokens(peers: list[str], owner: str, key: Any) -> list[str]:
    """One real peer access token per simulated peer (valid for the whole run)."""
    signer = jwk.construct(key.private_pem, "RS256")
    headers = {"kid": key.kid, "typ": ACCESS_TOKEN_TYPE}
    now = int(time.time())
    return [
        jwt.encode(
            access_claims(
                subject=peer_id,
                roles=("peer",),
                issuer=DEFAULT_ISSUER,
                audience=DEFAULT_AUDIENCE,
                now=now,
                ttl_s=900,
                owner=owner,
            ),
            signer,
            algorithm="RS256",
            headers=headers,
        )
        for peer_id in peers
    ]


# -- the simulated peers ---------------------------------------------------------------------


class Fleet:
    """Simulated peers: one coroutine each, publishing on a few shared channels.

    Each heartbeat is exactly what the runtime sends (same exchange, routing key,
    headers with the peer's token, JSON body), but its AMQP frames are marshalled once
    per peer and only the body frame per message: the load generator shares the two
    cores with the registry and must not be what limits the rate.
    """

    def __init__(self, peers: list[str], tokens: list[str], interval_s: float) -> None:
        self.peers = peers
        self.tokens = tokens
        self.interval_s = interval_s
        self.sent = 0
        self.stopping = asyncio.Event()
        self.session = uuid.uuid4().hex

    def _body(self, seq: int) -> bytes:
        return (
            f'{{"session":"{self.session}","seq":{seq:12d},"sent_at":{time.time():17.6f},'
            f'"interval_s":{self.interval_s:.3f}}}'
        ).encode()

    async def run(self, connections: int = 2) -> None:
        conns = [await aiormq.connect(AMQP) for _ in range(connections)]
        channels = [await c.channel(publisher_confirms=False) for c in conns]
        try:
            await asyncio.gather(
                *(self._peer(i, channels[i % len(channels)]) for i in range(len(self.peers)))
            )
        finally:
            for c in conns:
                await c.close()

    async def _peer(self, i: int, channel: aiormq.abc.AbstractChannel) -> None:
        peer_id = self.peers[i]
        number = channel.number
        size = len(self._body(0))
        props = Basic.Properties(
            headers=dict(peer_headers(self.tokens[i])),
            content_type="application/json",
            delivery_mode=1,
        )
        prefix = marshal(
            Basic.Publish(exchange=TELEMETRY.name, routing_key=telemetry_key(peer_id, "heartbeat")),
            number,
        ) + marshal(ContentHeader(0, size, props), number)
        queue = channel.connection.write_queue
        # Peers start spread over one interval, as real ones would be.
        await asyncio.sleep(self.interval_s * i / len(self.peers))
        seq = 0
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while not self.stopping.is_set():
            seq += 1
            body = self._body(seq)
            frame = prefix + marshal(ContentBody(body), number)
            await queue.put(ChannelFrame(payload=frame, should_close=False))
            self.sent += 1
            next_at += self.interval_s
            await asyncio.sleep(max(0.0, next_at - loop.time()))


class Junk:
    """Invalid-token heartbeats at ``rate`` per second, as a hostile publisher sends them.

    Every message carries a token that looks right (RS256, the platform's real ``kid``,
    a peer subject, unexpired) with a signature of fresh random bytes: no two are
    alike, so only a full signature check can tell it is forged, and no cache of
    refused tokens helps. Routing keys are the honest peers' own (``peer.<id>.heartbeat``
    with the victim's id): the worst case for per-peer accounting.
    """

    def __init__(self, peers: list[str], forged: str, rate: float, interval_s: float) -> None:
        self.peers = peers
        head, payload, _ = forged.split(".")
        self.head = head
        self.claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        self._unsigned: dict[str, str] = {}
        self.rate = rate
        self.interval_s = interval_s
        self.sent = 0
        self.stopping = asyncio.Event()

    def unsigned(self, peer_id: str) -> str:
        """``header.payload.`` of a token whose subject is ``peer_id`` (claims unchanged
        otherwise): a cheap check of the subject against the routing key passes."""
        found = self._unsigned.get(peer_id)
        if found is None:
            claims = json.dumps({**self.claims, "sub": peer_id}, separators=(",", ":"))
            payload = base64.urlsafe_b64encode(claims.encode()).rstrip(b"=").decode()
            found = self._unsigned[peer_id] = f"{self.head}.{payload}."
        return found

    async def run(self) -> None:
        if self.rate <= 0:
            return
        conn = await aiormq.connect(AMQP)
        channel = await conn.channel(publisher_confirms=False)
        number, queue = channel.number, conn.write_queue
        body = (
            f'{{"session":"junk","seq":1,"sent_at":0,"interval_s":{self.interval_s:.3f}}}'
        ).encode()
        body_frame = marshal(ContentBody(body), number)
        loop = asyncio.get_running_loop()
        started, batch = loop.time(), max(1, int(self.rate / 100))
        try:
            while not self.stopping.is_set():
                for _ in range(batch):
                    peer_id = self.peers[self.sent % len(self.peers)]
                    signature = base64.urlsafe_b64encode(os.urandom(256)).rstrip(b"=").decode()
                    props = Basic.Properties(
                        headers=dict(peer_headers(self.unsigned(peer_id) + signature)),
                        content_type="application/json",
                        delivery_mode=1,
                    )
                    frame = (
                        marshal(
                            Basic.Publish(
                                exchange=TELEMETRY.name,
                                routing_key=telemetry_key(peer_id, "heartbeat"),
                            ),
                            number,
                        )
                        + marshal(ContentHeader(0, len(body), props), number)
                        + body_frame
                    )
                    await queue.put(ChannelFrame(payload=frame, should_close=False))
                    self.sent += 1
                due = started + self.sent / self.rate
                await asyncio.sleep(max(0.0, due - loop.time()))
        finally:
            await conn.close()


def forged_token(peer_id: str, owner: str, kid: str) -> str:
    """A well-formed peer token naming the platform's ``kid``, signed with another key."""
    other = generate_key()
    return str(
        jwt.encode(
            access_claims(
                subject=peer_id,
                roles=("peer",),
                issuer=DEFAULT_ISSUER,
                audience=DEFAULT_AUDIENCE,
                now=int(time.time()),
                ttl_s=900,
                owner=owner,
            ),
            jwk.construct(other.private_pem, "RS256"),
            algorithm="RS256",
            headers={"kid": kid, "typ": ACCESS_TOKEN_TYPE},
        )
    )


PREFILL_TTL_S = 600


async def prefill(namespace: str, peers: list[str], tokens: list[str], count: int) -> None:
    """Queue ``count`` heartbeats for a registry that is not consuming yet.

    The queue is declared exactly as the registry declares it (with a TTL long enough
    to outlive its start-up).
    """
    queue = f"{namespace}.heartbeats"
    conn = await aiormq.connect(AMQP)
    try:
        channel = await conn.channel(publisher_confirms=False)
        await channel.queue_declare(
            queue,
            durable=True,
            arguments={
                "x-queue-type": "classic",
                "x-message-ttl": PREFILL_TTL_S * 1000,
                "x-max-length": 1_000_000,
                "x-overflow": "drop-head",
            },
        )
        await channel.queue_bind(queue, TELEMETRY.name, routing_key="peer.*.heartbeat")
        fleet = Fleet(peers, tokens, 5.0)
        number = channel.number
        size = len(fleet._body(0))
        prefixes: dict[int, bytes] = {}
        for k in range(count):
            i = k % len(peers)
            if i not in prefixes:
                props = Basic.Properties(
                    headers=dict(peer_headers(tokens[i])),
                    content_type="application/json",
                    delivery_mode=1,
                )
                key = telemetry_key(peers[i], "heartbeat")
                prefixes[i] = marshal(
                    Basic.Publish(exchange=TELEMETRY.name, routing_key=key), number
                ) + marshal(ContentHeader(0, size, props), number)
            frame = prefixes[i] + marshal(ContentBody(fleet._body(k)), number)
            await conn.write_queue.put(ChannelFrame(payload=frame, should_close=False))
        for _ in range(600):  # RabbitMQ's counts lag a little behind the publishes
            if queue_depth(queue) >= count * 0.99:
                break
            await asyncio.sleep(0.5)
    finally:
        await conn.close()


def queue_depth(name: str) -> int:
    r = httpx.get(f"{MGMT}/queues/%2F/{name}", auth=("admin", "admin"), timeout=10)
    return int(r.json().get("messages", 0)) if r.status_code == 200 else -1
