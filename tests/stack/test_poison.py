"""One hostile peer or user never blocks a queue, nor reaches the store (issue 31).

On the real stack: a message whose handler fails every time is set aside while the
messages behind it flow; a real aggregator refuses a flood of NUL-holding updates from
one enrolled peer at decode (counted, dropped, never dead-lettered), bounds that peer's
rate, and accepts the other peer's update meanwhile; every queue is bounded and the
broker refuses an oversized message; auth answers a NUL in a body with a 4xx.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import quote

import aio_pika
import httpx
import pytest

from peertrain.aggregator.config import AggregatorSettings
from peertrain.common.blobs import BlobStore
from peertrain.common.bus import (
    EVENTS,
    TELEMETRY,
    OutboxRelay,
    Subscriptions,
    dlq_name,
    make_broker,
)
from peertrain.common.bus.topology import MAX_MESSAGE_BYTES, QUEUE_POLICIES
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.codec import to_message
from peertrain.common.events.datasets import ArtifactRef
from peertrain.common.events.diagnostics import DIAGNOSTIC_PINGED, DiagnosticPinged
from peertrain.common.events.models import UPDATE_ACCEPTED, model_stream
from peertrain.common.events.training import JobConfigured, JobCreated, ShardPlan
from peertrain.common.security import peer_headers
from peertrain.common.settings import ServiceSettings
from peertrain.ml.weights import state_from_bytes, state_to_bytes
from peertrain.testkit.aggregator import running_aggregator_service
from peertrain.testkit.auth import AuthUnderTest, shared_auth_service
from peertrain.testkit.common import PLATFORM_PORTS, RABBIT_API
from peertrain.testkit.orchestrator import orchestrator_process

from .test_aggregator import FEATURES, Job, _delta, _holdout, _peer, _sha, _user

AMQP = ServiceSettings().amqp_url.get_secret_value()
ERROR_KEYS = {"code", "message", "detail"}


async def _queue(name: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=RABBIT_API, auth=("admin", "admin"), timeout=10) as m:
        r = await m.get(f"/queues/%2F/{quote(name, safe='')}")
        return dict(r.json()) if r.status_code == 200 else {}


async def _count(name: str) -> int:
    """Messages in ``name`` now (a passive declare: exact, unlike the management API)."""
    conn = await aio_pika.connect(AMQP)
    async with conn:
        channel = await conn.channel()
        queue = await channel.declare_queue(name, passive=True)
        return queue.declaration_result.message_count or 0


async def _metric(port: int, name: str, **labels: str) -> float:
    async with httpx.AsyncClient(timeout=10) as http:
        text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    pattern = re.compile(rf"^{re.escape(name)}(\{{[^}}]*\}})? ([0-9.e+-]+)$", re.M)
    want = [f'{k}="{v}"' for k, v in labels.items()]
    return sum(
        float(m.group(2))
        for m in pattern.finditer(text)
        if all(w in (m.group(1) or "") for w in want)
    )


# -- a failing message is set aside ----------------------------------------------------


async def test_a_message_that_fails_every_time_never_holds_the_ones_behind_it(
    broker: Any, unique: Callable[[str], str], eventually: Any
) -> None:
    queue, note = unique("test.poison"), unique("n")
    seen: list[tuple[str, int]] = []  # (kind, delivery) in handling order

    async def on_event(event: RecordedEvent) -> None:
        kind = event.data.note.rpartition(".")[2]  # type: ignore[union-attr]
        seen.append((kind, sum(1 for k, _ in seen if k == kind) + 1))
        if kind.startswith("poison"):
            raise ValueError("a poison message: fails the same way every time")

    subs = Subscriptions(delivery_limit=5)
    subs.add(queue, [DIAGNOSTIC_PINGED], on_event)
    await subs.declare(broker)
    # everything is in the queue before the consumer starts: the order is the queue's
    kinds = [k for i in range(5) for k in (f"poison{i}", f"honest{i}")]
    conn = await aio_pika.connect(AMQP)
    async with conn:
        channel = await conn.channel(publisher_confirms=True)
        exchange = await channel.get_exchange(EVENTS.name)
        for i, kind in enumerate(kinds):
            new = NewEvent.of(DiagnosticPinged(n=i, note=f"{note}.{kind}"), producer="test")
            body = to_message(new.stored_as(f"poison:{note}", i + 1, i + 1))
            await exchange.publish(aio_pika.Message(body), routing_key=DIAGNOSTIC_PINGED)
    await eventually(lambda: _wait_count(queue, 10), timeout=30, what="10 messages queued")
    subs.attach(broker)
    await broker.start()

    async def dead_lettered() -> bool:
        return await _count(dlq_name(queue)) == 5

    await eventually(dead_lettered, timeout=120, what="the poison messages dead-lettered")
    honest = [i for i, (k, _) in enumerate(seen) if k.startswith("honest")]
    poison_retries = [i for i, (k, d) in enumerate(seen) if k.startswith("poison") and d > 1]
    assert len(honest) == 5
    # every honest message was handled before any poison message was tried a second time
    assert max(honest) < min(poison_retries), seen
    # and each poison message had its deliveries: one, and five again (the limit)
    assert sorted(d for k, d in seen if k == "poison0") == [1, 2, 3, 4, 5, 6]


async def _wait_count(queue: str, n: int) -> bool:
    return await _count(queue) >= n


# -- a real aggregator and a hostile peer ----------------------------------------------

FLOOD = 1000
"""Messages the hostile peer sends at once beyond its NUL ones (its burst is 200)."""


@pytest.fixture(scope="module")
def auth(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthUnderTest]:
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as svc:
        yield svc


@pytest.fixture(scope="module")
def aggregator(
    auth: AuthUnderTest, run_id: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """The aggregator's bucket and its updates queue."""
    with running_aggregator_service(
        mongo_db=auth.mongo_db, run=f"p{run_id}", base_dir=tmp_path_factory.getbasetemp()
    ) as (_, bucket):
        yield bucket, f"aggregator-p{run_id}.updates"


@pytest.fixture
async def blobs(aggregator: tuple[str, str]) -> AsyncIterator[BlobStore]:
    async with BlobStore(AggregatorSettings(s3_bucket=aggregator[0]).blob_store_config()) as store:
        yield store


@pytest.fixture
async def orchestrator(auth: AuthUnderTest, mongo: Any, settings: Any) -> AsyncIterator[EventLog]:
    log = EventLog(mongo[auth.mongo_db])
    broker = make_broker(settings.amqp_url.get_secret_value())
    await broker.connect()
    relay = OutboxRelay(log, broker, producer="orchestrator")
    relay.start()
    try:
        yield log
    finally:
        await relay.stop()
        await broker.stop()


async def _publish(peer: tuple[str, str], kind: str, bodies: list[bytes]) -> None:
    peer_id, token = peer
    conn = await aio_pika.connect(AMQP)
    async with conn:
        channel = await conn.channel()
        exchange = await channel.get_exchange(TELEMETRY.name)
        for body in bodies:
            await exchange.publish(
                aio_pika.Message(body, headers=dict(peer_headers(token))),
                routing_key=f"peer.{peer_id}.{kind}",
            )


async def test_a_nul_flood_from_one_peer_is_refused_at_once_and_the_others_updates_flow(
    aggregator: tuple[str, str], blobs: BlobStore, orchestrator: EventLog, eventually: Any
) -> None:
    _, updates = aggregator
    port = PLATFORM_PORTS["aggregator"]
    with httpx.Client(timeout=30) as http:
        owner_id, owner_token = _user(http)
        honest, hostile = _peer(http, owner_token), _peer(http, owner_token)
    job = Job(orchestrator, blobs, [honest, hostile])
    holdout = _holdout()
    holdout_key = f"jobs/{job.id}/holdout.npz"
    await blobs.put_bytes(holdout_key, holdout)
    config = JobConfigured(
        job_id=job.id,
        config_key=f"jobs/{job.id}/config.json",
        config_sha256="0" * 64,
        rounds=1,
        model={"arch": "mlp", "hidden": [16]},
        training={"seed": 7, "lr": 0.1},
        aggregation={"strategy": "fedavg", "max_update_norm": 10.0},
        feature_spec=FEATURES,
        shards=(ShardPlan(index=0, peer_id=honest[0], key="s0", sha256="0" * 64, size=1, rows=40),),
        holdout=ArtifactRef(key=holdout_key, sha256=_sha(holdout), size=len(holdout)),
        reference_weight=40.0,
    )
    created = JobCreated(
        job_id=job.id, owner_id=owner_id, name="poison", dataset_id="d", peers=(honest[0],)
    )
    await job.append(created, config)

    async def v0() -> list[RecordedEvent]:
        return await job.model_events("model.version_created")

    await eventually(v0, timeout=60, what="v0")
    base = state_from_bytes(await blobs.get_bytes(f"models/{job.id}/v0.safetensors"))
    task = job.task(1, 0, 0)
    await job.open_round(1, [task])
    announced = await job.upload(task, state_to_bytes(_delta(base, 1)))
    before = {
        reason: await _metric(port, "peertrain_peer_messages_refused_total", reason=reason)
        for reason in ("bad_body", "over_rate")
    }

    # the hostile peer: 20 updates whose job_id holds a NUL (the issue's flood), then
    # FLOOD more than its burst allows; then the honest peer announces its update
    poison = json.loads(announced.model_dump_json())
    poison["job_id"] = "x\u0000n"
    nul = json.dumps(poison).encode()
    assert b"\\u0000" in nul  # JSON's escape: the NUL reaches the consumer as such
    await _publish(hostile, "update", [nul] * 20 + [b"{}"] * FLOOD)
    await job.announce(0, announced)

    async def accepted() -> list[RecordedEvent]:
        events = await orchestrator.read_stream(model_stream(job.id))
        return [e for e in events if e.type == UPDATE_ACCEPTED]

    [event] = await eventually(accepted, timeout=60, what="the honest update accepted")
    assert event.data.peer_id == honest[0]  # type: ignore[attr-defined]
    refused_nul = await _metric(port, "peertrain_peer_messages_refused_total", reason="bad_body")
    over_rate = await _metric(port, "peertrain_peer_messages_refused_total", reason="over_rate")
    assert refused_nul - before["bad_body"] >= 20
    assert over_rate - before["over_rate"] >= FLOOD / 2
    # nothing was dead-lettered or set aside: refused at decode, dropped at once
    assert await _count(dlq_name(updates)) == 0
    assert await _metric(port, "peertrain_events_consumed_total", outcome="set_aside") == 0
    assert await _metric(port, "peertrain_events_rejected_total") == 0


async def test_nul_reports_from_one_peer_never_hold_the_orchestrators_peer_queue(
    auth: AuthUnderTest, run_id: str, tmp_path: Any, eventually: Any
) -> None:
    prefix = f"orchestrator-p{run_id}"
    port = PLATFORM_PORTS["orchestrator"]
    process = orchestrator_process(mongo_db=auth.mongo_db, log_dir=tmp_path, queue_prefix=prefix)
    process.start()
    try:
        with httpx.Client(timeout=30) as http:
            _, owner_token = _user(http)
            honest, hostile = _peer(http, owner_token), _peer(http, owner_token)

        def accepted(job_id: str) -> bytes:
            body = {"task_id": "t", "job_id": job_id, "round": 1, "attempt": 1, "shard": 0}
            return json.dumps(body).encode()

        queue = f"{prefix}.peers"
        applied = await _metric(
            port, "peertrain_events_consumed_total", queue=queue, outcome="applied"
        )
        await _publish(hostile, "accepted", [accepted("x\u0000n")] * 20)
        # an honest peer's report (of a task the orchestrator does not know: ignored)
        await _publish(honest, "accepted", [accepted(uuid.uuid4().hex)])

        async def handled() -> bool:
            done = await _metric(
                port, "peertrain_events_consumed_total", queue=queue, outcome="applied"
            )
            return done >= applied + 1

        await eventually(handled, timeout=30, what="the honest report handled")
        refused = await _metric(port, "peertrain_peer_messages_refused_total", reason="bad_body")
        assert refused >= 20
        assert await _count(dlq_name(queue)) == 0
        assert await _metric(port, "peertrain_events_consumed_total", outcome="set_aside") == 0
    finally:
        process.stop()
        async with httpx.AsyncClient(base_url=RABBIT_API, auth=("admin", "admin"), timeout=10) as m:
            r = await m.get("/queues/%2F", params={"columns": "name"})
            for q in r.json():
                if q["name"].startswith(prefix + "."):
                    await m.delete(f"/queues/%2F/{quote(q['name'], safe='')}")


# -- bounds ----------------------------------------------------------------------------


async def test_every_queue_is_bounded_and_the_broker_refuses_an_oversized_message(
    aggregator: tuple[str, str], eventually: Any
) -> None:
    _, updates = aggregator
    expected = QUEUE_POLICIES["peertrain-telemetry-bound"]["definition"]

    async def bounded() -> dict[str, Any]:
        q = await _queue(updates)
        return q if q.get("effective_policy_definition") else {}

    q = await eventually(bounded, timeout=30, what="a policy on the updates queue")
    assert q["effective_policy_definition"] == expected
    dlq = await _queue(dlq_name(updates))
    assert dlq["effective_policy_definition"] == QUEUE_POLICIES["peertrain-dlq-bound"]["definition"]
    assert "x-expires" not in dlq["arguments"]
    conn = await aio_pika.connect(AMQP)
    async with conn:
        channel = await conn.channel()
        with pytest.raises(aio_pika.exceptions.AMQPError):
            await channel.default_exchange.publish(
                aio_pika.Message(b"x" * (MAX_MESSAGE_BYTES + 1)), routing_key=updates
            )
            await channel.declare_queue(updates, passive=True)  # the channel is closed by now


# -- auth ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body"),
    [
        # shaped like a refresh token, so that its family id would reach a query
        ("/refresh", {"refresh_token": "ptr.fam\u0000ily.secret"}),
        ("/logout", {"refresh_token": "ptr.fam\u0000ily.secret"}),
        ("/peers/token", {"peer_id": "p\u0000", "peer_secret": "s"}),
        ("/peers/token", {"peer_id": "p", "peer_secret": "s\u0000"}),
        ("/peers/enroll", {"enrollment_token": "pte.t\u0000", "name": "box"}),
    ],
)
async def test_a_nul_in_an_auth_body_is_a_4xx_in_the_one_error_shape(
    auth: AuthUnderTest, path: str, body: dict[str, str]
) -> None:
    async with httpx.AsyncClient(base_url=auth.gateway_url, timeout=30) as http:
        r = await http.post(
            path, content=json.dumps(body), headers={"content-type": "application/json"}
        )
    assert 400 <= r.status_code < 500, r.text
    answer = r.json()
    assert set(answer) == {"error"} and set(answer["error"]) == ERROR_KEYS
