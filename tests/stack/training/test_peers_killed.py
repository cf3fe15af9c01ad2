"""Three of ten peers SIGKILLed in the middle of a round: the job goes on without them.

Their tasks are lost once the registry sees them offline (no goodbye: a SIGKILLed peer
just stops heartbeating) and their shards go to the peers still online, or the round
closes at its deadline with what it has; below ``min_peers`` it would be opened again
(the rules are the same pure ``reconcile`` the orchestrator's unit tests drive through
every branch). The job completes, and its last round includes nothing from a dead peer.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_faults import ROUNDS, small_job
from test_mnist import mnist
from training_support import (
    Platform,
    create_job,
    finished,
    job_events,
    peers_active,
    wait_for,
)

pytestmark = [pytest.mark.stack, pytest.mark.slow]

NAMES = [f"k{n}" for n in range(10)]


async def test_three_of_ten_peers_killed_mid_round(platform: Platform, http: Any) -> None:
    dataset_id = await mnist(platform)
    peers = [platform.peer(n).peer_id for n in NAMES]
    await peers_active(platform, peers)
    body = small_job(dataset_id, peers, {"min_peers": 7, "round_deadline_s": 90})
    job_id = await create_job(platform, body)

    async def round_two_running() -> bool:
        r = (await http.get(f"/api/jobs/{job_id}")).json()
        return (r.get("current_round") or 0) >= 2

    await wait_for(round_two_running, timeout=600, what="round 2")
    victims = NAMES[-3:]
    for name in victims:
        platform.peers[name].kill()
    dead = {platform.peers[n].peer_id for n in victims}
    job = await finished(platform, job_id)
    assert job["state"] == "completed", job
    assert job["latest"]["accuracy"] > 0.8
    events = await job_events(http, job_id)
    killed_at = max(
        i for i, e in enumerate(events) if e["type"] == "round.opened" and e["data"]["round"] == 2
    )
    after = events[killed_at:]
    lost = [e["data"] for e in after if e["type"] == "task.lost" and e["data"]["peer_id"] in dead]
    closed_at_deadline = [
        e for e in after if e["type"] == "round.closed" and e["data"]["reason"] == "deadline"
    ]
    assert lost or closed_at_deadline, "the dead peers' work was neither lost nor waited out"
    last = [
        e["data"] for e in events if e["type"] == "round.closed" and e["data"]["round"] == ROUNDS
    ]
    assert last and not {u["peer_id"] for u in last[-1]["included"]} & dead
