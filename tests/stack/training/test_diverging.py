"""A job whose learning rate makes its training diverge fails by itself, and says why.

Three honest peers train the contract suite's digits with ``lr`` 10 and ``momentum``
0.99 (``DIVERGING``): every update of round 1 is refused for its numbers. No peer gets a
strike and none is excluded; the job fails at once with ``training_diverged``, naming
the round and the settings to change, as the simulation's run of the same case does.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from test_contract import digits, peer_names, start_peers
from training_support import Platform, create_job, finished, job_events, peers_active

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "contract"))

from contract_specs import DIVERGING

pytestmark = [pytest.mark.stack]


async def test_a_diverging_job_fails_as_training_diverged_and_excludes_nobody(
    platform: Platform, http: Any
) -> None:
    dataset_id = await digits(platform)
    await asyncio.to_thread(start_peers, platform, [DIVERGING])
    peers = [platform.peers[name].peer_id for name in peer_names(DIVERGING)]
    await peers_active(platform, peers)
    body = {"name": "diverging", "dataset_id": dataset_id, "peers": peers}
    job_id = await create_job(platform, {**body, **DIVERGING.spec()})
    job = await finished(platform, job_id, timeout=300)
    assert job["state"] == "failed", job
    assert job["error_code"] == "training_diverged", job
    assert "round 1" in job["error"] and "training.lr" in job["error"], job["error"]
    assert "aggregation.max_update_norm" in job["error"], job["error"]
    events = await job_events(http, job_id)
    types = [e["type"] for e in events]
    assert "peer.excluded" not in types and "round.failed" not in types, types
    rejected = [e["data"] for e in events if e["type"] == "update.rejected"]
    assert rejected and not any(r["strike"] for r in rejected), rejected
    assert {r["code"] for r in rejected} <= {"non_finite", "norm_too_large"}
    assert "model.exported" not in types and "job.completed" not in types
