"""A straggler never holds a synchronous round (``aggregation.over_select``).

Three peers train the contract suite's digits, ``n`` = 2 of them and one more
(``over_select`` 1), with an hour's ``round_deadline_s``. One peer never answers its
round 1 task (``hostile_peer.py --mode silent``: online, heartbeating, hung): round 1
closes on the two others' updates without waiting for the deadline, the silent peer's
task is ended as ``surplus`` (no strike, no exclusion), and the job completes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from test_contract import digits
from training_support import Platform, create_job, finished, job_events, peers_active

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "contract"))

from contract_specs import CASES

pytestmark = [pytest.mark.stack]


async def test_round_1_closes_on_the_fast_peers_without_the_silent_one(
    platform: Platform, http: Any
) -> None:
    dataset_id = await digits(platform)
    silent = platform.peer("straggle-silent", mode="silent").peer_id
    fast = [platform.peer(n).peer_id for n in ("p0", "p1")]
    peers = [silent, *fast]
    await peers_active(platform, peers)
    spec = CASES["fedavg-iid"].spec()
    spec["training"] = {**spec["training"], "rounds": 3}
    spec["aggregation"] = {
        **spec["aggregation"],
        "min_peers": 2,
        "over_select": 1,
        "round_deadline_s": 3600,
    }
    body = {"name": "stragglers", "dataset_id": dataset_id, "peers": peers, **spec}
    job_id = await create_job(platform, body)
    job = await finished(platform, job_id, timeout=600)  # far less than the deadline
    assert job["state"] == "completed", job
    events = await job_events(http, job_id)
    closed = [e["data"] for e in events if e["type"] == "round.closed"]
    assert [c["round"] for c in closed] == [1, 2, 3]
    assert all(c["reason"] == "complete" for c in closed), closed
    first = closed[0]
    assert sorted(u["peer_id"] for u in first["included"]) == sorted(fast), first
    lost = [e["data"] for e in events if e["type"] == "task.lost"]
    round_1 = [t for t in lost if t["round"] == 1]
    assert [(t["peer_id"], t["reason"]) for t in round_1] == [(silent, "surplus")], lost
    assert not [t for t in lost if t["reason"] == "deadline"], lost  # nothing waited for it
    assert "peer.excluded" not in {e["type"] for e in events}
    assert "round.failed" not in {e["type"] for e in events}
    shown = job["round"]
    assert (shown["shards"], shown["closes_on"]) == (3, 2), shown
    assert len(shown["accepted"]) >= 2, shown
