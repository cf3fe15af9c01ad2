"""Every peer of a job goes away mid-job: the round waits for them, and the job goes on.

Two peers train the contract suite's digits (``min_peers`` 2); both are stopped while
the job runs. Whatever the round was doing, no attempt is spent on it: tasks lost to
peers going offline fail an attempt that does not count, its retry backs off, and the
next opening waits (``round.waiting``, shown in the job's view with what it needs and
until when). Started again, the peers come back online and the job completes.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from test_contract import digits
from training_support import (
    Platform,
    create_job,
    finished,
    job_events,
    peers_active,
    wait_for,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "contract"))

from contract_specs import CASES

pytestmark = [pytest.mark.stack]

NAMES = ["w0", "w1"]


async def test_a_round_waits_for_its_peers_and_the_job_completes_when_they_are_back(
    platform: Platform, http: Any
) -> None:
    dataset_id = await digits(platform)
    peers = [platform.peer(n).peer_id for n in NAMES]
    await peers_active(platform, peers)
    spec = CASES["fedavg-iid"].spec()
    spec["training"] = {**spec["training"], "rounds": 30}
    spec["aggregation"] = {**spec["aggregation"], "min_peers": 2, "peer_wait_s": 600}
    body = {"name": "peers-wait", "dataset_id": dataset_id, "peers": peers, **spec}
    job_id = await create_job(platform, body)

    async def running() -> bool:
        r = (await http.get(f"/api/jobs/{job_id}")).json()
        return (r.get("current_round") or 0) >= 2

    await wait_for(running, timeout=300, what="round 2")
    for name in NAMES:
        await asyncio.to_thread(platform.peers[name].stop)

    async def waiting() -> dict[str, Any] | None:
        r = (await http.get(f"/api/jobs/{job_id}")).json()
        assert r["state"] == "running", r
        found: dict[str, Any] | None = r.get("waiting")
        return found

    wait = await wait_for(waiting, timeout=180, what="the round waiting for peers")
    assert wait["online"] < 2 and wait["needed"] == 2, wait  # they left one by one
    for name in NAMES:
        platform.peer(name)  # started again
    job = await finished(platform, job_id, timeout=600)
    assert job["state"] == "completed", job
    assert job["waiting"] is None
    events = await job_events(http, job_id)
    failed = [e["data"] for e in events if e["type"] == "round.failed"]
    assert not any(f["counted"] for f in failed), failed  # peers going away costs nothing
    waits = [e["data"] for e in events if e["type"] == "round.waiting"]
    assert waits and all(w["needed"] == 2 for w in waits), waits
    assert "peer.excluded" not in {e["type"] for e in events}
