"""A peer runtime too old to read this platform's tasks is not put in jobs.

A runtime drops a task message it cannot read (its round then waits out the deadline),
so a change to the tasks would leave every older runtime silently useless. Runtimes
announce the protocol they read with their specs (``DeviceSpecs.protocol``; absent: 1);
the orchestrator refuses to name an older one (409 ``peers_unavailable``, problem
``outdated``) and no selection picks it. Here a real peer is enrolled and its runtime
stopped; the test announces as it (signed with its own token) first as a runtime that
names no protocol, then as a current one.
"""

from __future__ import annotations

import json
from typing import Any

import aio_pika
import httpx
import pytest
from test_mnist import mnist
from training_support import GATEWAY, Platform, wait_for

from peertrain.common.bus import TELEMETRY
from peertrain.common.events.peers import PEER_PROTOCOL, telemetry_key
from peertrain.common.security import peer_headers
from peertrain.common.settings import ServiceSettings
from peertrain.testkit.peer import announce_body

pytestmark = [pytest.mark.stack]


def peer_token(p: Platform, name: str) -> tuple[str, str]:
    """The peer's id and a fresh access token, as its runtime gets one."""
    identity = json.loads((p.peers[name].config_dir / "identity.json").read_text())
    r = httpx.post(
        f"{GATEWAY}/api/auth/peers/token",
        json={"peer_id": identity["peer_id"], "peer_secret": identity["peer_secret"]},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return identity["peer_id"], str(r.json()["access_token"])


async def announce(peer_id: str, token: str, seq: int, **specs: Any) -> None:
    body = announce_body("protocol-test", seq, interval_s=30.0, **specs)
    conn = await aio_pika.connect(ServiceSettings().amqp_url.get_secret_value())
    async with conn:
        channel = await conn.channel()
        exchange = await channel.get_exchange(TELEMETRY.name, ensure=False)
        await exchange.publish(
            aio_pika.Message(json.dumps(body).encode(), headers=dict(peer_headers(token))),
            routing_key=telemetry_key(peer_id, "announce"),
        )


async def test_a_runtime_too_old_for_the_tasks_is_named_and_passed_over(platform: Platform) -> None:
    dataset_id = await mnist(platform)
    platform.peer("protocol").stop()  # enrolled and registered; its runtime gone
    peer_id, token = peer_token(platform, "protocol")
    probe = {"name": "protocol", "dataset_id": dataset_id, "peers": [peer_id]}
    async with platform.client() as http:

        async def problem() -> str:
            """What the orchestrator holds against the peer ("": nothing)."""
            r = await http.post("/api/jobs", params={"dry_run": "true"}, json=probe)
            if r.status_code in (200, 422):  # 422: the probe's model, checked after the peers
                return ""
            assert r.status_code == 409, r.text
            return str(r.json()["error"]["detail"]["peers"][0]["problem"])

        async def outdated() -> bool:
            return await problem() == "outdated"

        async def usable() -> bool:
            return await problem() == ""

        await announce(peer_id, token, 1)  # a runtime from before protocols were announced
        await wait_for(outdated, timeout=60, what="the old runtime named outdated")
        r = await http.post("/api/jobs", params={"dry_run": "true"}, json=probe)
        assert r.json()["error"]["code"] == "peers_unavailable", r.text
        # the same peer, updated: its next announce makes it usable
        await announce(peer_id, token, 2, protocol=PEER_PROTOCOL)
        await wait_for(usable, timeout=60, what="the updated runtime usable")
