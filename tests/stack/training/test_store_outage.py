"""The event store goes away mid-job and comes back: every job completes by itself.

PostgreSQL (FerretDB's backend) is stopped for 15 s at three moments of a job: while
its dataset is being sharded, in the middle of a round, and right after its last model
version. Every append in that time fails. The services keep their messages and wait
with backoff (an outage does not use up a queue's delivery limit), decide again from
their state when the store is back, and the orchestrator's tick re-derives anything a
failed append left undecided. No step is taken by hand: no redrive, no restart.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_faults import ROUNDS, small_job
from test_mnist import mnist
from training_support import Platform, create_job, finished, peers_active, wait_for

from peertrain.common.bus import Subscriptions
from peertrain.common.events import RecordedEvent
from peertrain.common.events.models import MODEL_VERSION_CREATED, ModelVersionCreated

pytestmark = [pytest.mark.stack, pytest.mark.slow]

OUTAGE_S = 15.0
"""Three times the longest backoff between retries (5 s): every service meets the outage
mid-retry, more than once."""


async def outage(stack: Any) -> None:
    """PostgreSQL away for :data:`OUTAGE_S`, then back."""
    await asyncio.to_thread(stack, "stop", "postgres")
    try:
        await asyncio.sleep(OUTAGE_S)
    finally:
        await asyncio.to_thread(stack, "start", "postgres")


async def start(platform: Platform) -> tuple[str, dict[str, Any]]:
    dataset_id = await mnist(platform)
    peers = [platform.peer(n).peer_id for n in ("p0", "p1", "p2", "p3")]
    await peers_active(platform, peers)
    return dataset_id, small_job(dataset_id, peers)


async def test_store_outage_while_sharding(platform: Platform, stack: Any) -> None:
    _, body = await start(platform)
    job_id = await create_job(platform, body)  # sharding starts from job.created
    await outage(stack)
    job = await finished(platform, job_id)
    assert job["state"] == "completed", job


async def test_store_outage_mid_round(platform: Platform, http: Any, stack: Any) -> None:
    _, body = await start(platform)
    job_id = await create_job(platform, body)

    async def in_round_two() -> bool:
        r = await http.get(f"/api/jobs/{job_id}")
        return (r.json().get("current_round") or 0) >= 2

    await wait_for(in_round_two, timeout=300, what="round 2")
    await outage(stack)
    job = await finished(platform, job_id)
    assert job["state"] == "completed", job


async def test_store_outage_after_the_last_version(
    platform: Platform, broker: Any, stack: Any, unique: Any
) -> None:
    _, body = await start(platform)
    last = asyncio.get_running_loop().create_future()
    watched: list[str] = []

    async def on_version(event: RecordedEvent) -> None:
        data = event.data
        assert isinstance(data, ModelVersionCreated)
        if watched and data.job_id == watched[0] and data.version == ROUNDS and not last.done():
            last.set_result(None)

    subs = Subscriptions()
    subs.add(unique("test.outage"), [MODEL_VERSION_CREATED], on_version)
    await subs.declare(broker)
    subs.attach(broker)
    await broker.start()
    job_id = await create_job(platform, body)
    watched.append(job_id)
    await asyncio.wait_for(last, timeout=600)
    await outage(stack)  # evaluation, export and completion are still to be appended
    job = await finished(platform, job_id)
    assert job["state"] == "completed", job
    assert job["final_version"] == ROUNDS
