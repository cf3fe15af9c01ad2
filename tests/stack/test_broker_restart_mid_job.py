"""RabbitMQ SIGKILLed in the middle of a training job and started again: nobody is blamed.

Issue 31's anchor on the real platform: scikit-learn's digits, an MLP 64-128-10, five
peers heartbeating every second with the runtime's own reconnect settings (backoff up
to 15 s), the registry's defaults (offline after 3 missed intervals), ``min_peers`` 3.
Once every peer has accepted its task of round :data:`GATE_ROUND`, RabbitMQ is
SIGKILLed; the peers finish that task while it is away (each holds its update until
the test opens a gate, see ``gated_peer.py``, so the update is surely produced with
the link down and waits in the peer's outbox), and RabbitMQ is started again
:data:`OUTAGE_S` later.

What the platform owes its peers (issue 31, item 1): the registry knew it could not
hear (liveness paused while the broker was away), no peer that stayed up was declared
offline for the platform's outage, no task was lost, the round includes every peer's
update, and the job completes every round.
"""

from __future__ import annotations

import asyncio
import io
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from sklearn.datasets import load_digits

sys.path.insert(0, str(Path(__file__).parent / "training"))

from training_support import (
    GATEWAY,
    Platform,
    create_job,
    dataset,
    finished,
    job_events,
    peers_active,
    run_platform,
    wait_for,
)

from peertrain.common.eventlog import EventLog
from peertrain.common.events.peers import PeerWentOffline, peer_stream
from peertrain.testkit.common import PLATFORM_PORTS
from peertrain.testkit.peer import PeerProcess

pytestmark = [pytest.mark.stack, pytest.mark.slow]

ROUNDS = 5
GATE_ROUND = 2
OUTAGE_S = 7.0
"""How long RabbitMQ stays down after the kill (the issue's: about 7 s)."""
NAMES = [f"b{i}" for i in range(5)]
GATED_PEER = Path(__file__).with_name("gated_peer.py")


def digits_csv() -> bytes:
    """scikit-learn's 1,797 8x8 digits as ``label,f0..f63`` CSV."""
    digits = load_digits()
    table = np.concatenate([digits.target[:, None], digits.data.astype(np.int64)], axis=1)
    header = "label," + ",".join(f"f{i}" for i in range(digits.data.shape[1]))
    out = io.StringIO()
    np.savetxt(out, table, fmt="%d", delimiter=",", header=header, comments="")
    return out.getvalue().encode()


@pytest.fixture(scope="module")
def platform(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    """Every service running, the registry on its default liveness settings."""
    yield from run_platform(
        run_id,
        tmp_path_factory,
        registry_env={"PEERTRAIN_REGISTRY_OFFLINE_AFTER_INTERVALS": "3"},
    )


def start_gated_peers(p: Platform, gate: Path) -> list[str]:
    """Enroll and start the five peers (the runtime's own reconnect backoff)."""
    ids = []
    for name in NAMES:
        peer = PeerProcess.enroll(
            GATEWAY,
            p.enroll(),
            config_dir=p.base / f"peer-{name}",
            log_dir=p.base,
            name=f"{name}-{uuid.uuid4().hex[:6]}",
        )
        p.peers[name] = peer  # stopped, and its queues removed, with the platform
        peer.start(
            interval_s=1.0,
            reconnect_max_s=15.0,
            script=GATED_PEER,
            args=["--gate-round", str(GATE_ROUND), "--gate-file", str(gate)],
            env={"PEERTRAIN_PEER_THREADS": "1"},
        )
        ids.append(peer.peer_id)
    return ids


async def registry_metric(name: str) -> float:
    async with httpx.AsyncClient(timeout=10) as client:
        r = await client.get(f"http://127.0.0.1:{PLATFORM_PORTS['registry']}/metrics")
    for line in r.text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return float("nan")


async def offline_events(log: EventLog, peer_id: str) -> list[PeerWentOffline]:
    events = await log.read_stream(peer_stream(peer_id))
    return [e.data for e in events if isinstance(e.data, PeerWentOffline)]


@pytest.mark.timeout(1500)
async def test_rabbitmq_killed_mid_job_blames_no_peer_and_the_job_completes(
    platform: Platform, mongo: Any, stack: Callable[..., str]
) -> None:
    gate = platform.base / "gate-open"
    digits = await dataset(platform, "digits", "digits.csv", digits_csv(), label_column="label")
    peers = await asyncio.to_thread(start_gated_peers, platform, gate)
    await peers_active(platform, peers)
    job_id = await create_job(
        platform,
        {
            "name": "digits-broker-restart",
            "dataset_id": digits,
            "peers": peers,
            "model": {"arch": "mlp", "hidden": [128]},
            "training": {
                "rounds": ROUNDS,
                "local_epochs": 2,
                "batch_size": 32,
                "lr": 0.05,
                "optimizer": "sgd",
                "momentum": 0.9,
                "seed": 7,
            },
            # The deadline leaves room for the outage (the test is about liveness, and
            # RabbitMQ takes a while to start on a loaded machine).
            "aggregation": {"strategy": "fedavg", "min_peers": 3, "round_deadline_s": 180},
            "sharding": {"strategy": "iid"},
        },
    )
    log = EventLog(mongo[platform.mongo_db])
    async with platform.client() as http:

        async def all_accepted() -> bool:
            events = await job_events(http, job_id)
            accepted = {
                e["data"]["peer_id"]
                for e in events
                if e["type"] == "task.accepted" and e["data"]["round"] == GATE_ROUND
            }
            return accepted == set(peers)

        await wait_for(all_accepted, timeout=600, what=f"round {GATE_ROUND} accepted by all")
        offline_before = {p: len(await offline_events(log, p)) for p in peers}

        await asyncio.to_thread(stack, "kill", "rabbitmq")
        try:

            async def blind() -> bool:  # the registry knows it cannot hear
                return await registry_metric("registry_liveness_paused") == 1

            await wait_for(blind, timeout=60, what="the registry's liveness paused")
            gate.touch()  # the peers finish training and upload while the broker is away
            await asyncio.sleep(OUTAGE_S)  # the outage itself, not a wait for something
        finally:
            await asyncio.to_thread(stack, "start", "rabbitmq")

        job = await finished(platform, job_id, timeout=900)
        events = await job_events(http, job_id)

    # What the registry and the peers guarantee: nobody blamed, every task delivered.
    for peer_id in peers:
        new = (await offline_events(log, peer_id))[offline_before[peer_id] :]
        assert not new, f"peer {peer_id} declared offline for the broker's outage: {new}"
    lost = [e["data"] for e in events if e["type"] == "task.lost"]
    assert not lost, f"tasks lost over the broker's outage: {lost}"
    closed = [
        e["data"]
        for e in events
        if e["type"] == "round.closed" and e["data"]["round"] == GATE_ROUND
    ]
    assert closed, f"round {GATE_ROUND} never closed: {job}"
    included = {u["peer_id"] for u in closed[-1]["included"]}
    assert included == set(peers), "an update trained while the broker was away was not used"
    # And so the job goes on and completes every round.
    assert job["state"] == "completed", job
    assert job["final_version"] == ROUNDS
