"""Asynchronous rounds (FedBuff) on the platform: three peers of different speeds
(``peertrain-peer run --slowdown``), a version every ``buffer_size`` accepted updates.

The digits of the contract suite, uploaded as a user would; real peer processes slowed
by 1, 2 and 4; the job completes, every ``round.closed`` includes exactly K updates in
the order they were accepted, each within the staleness bound, and there is one model
version per round. The replay of such a log is the contract suite's
(``tests/stack/test_async_replay.py``).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from training_support import Platform, create_job, dataset, finished, job_events, peers_active

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "contract"))
from contract_specs import HOLDOUT_FRACTION, LABEL_COLUMN, MODEL, TRAINING, digits_csv

pytestmark = [pytest.mark.stack]

SLOWDOWNS = (1, 2, 4)
K = 2
ROUNDS = 4
MAX_STALENESS = 2


async def test_an_async_job_of_uneven_peers_builds_a_version_every_k_updates(
    platform: Platform, http: object
) -> None:
    dataset_id = await dataset(
        platform,
        "contract-digits",
        "digits.csv",
        digits_csv(),
        label_column=LABEL_COLUMN,
        holdout_fraction=str(HOLDOUT_FRACTION),
    )
    names = [f"async-x{f}" for f in SLOWDOWNS]
    for name, factor in zip(names, SLOWDOWNS, strict=True):
        env = {"PEERTRAIN_PEER_SLOWDOWN": str(factor)}
        await asyncio.to_thread(platform.peer, name, env=env)
    peers = [platform.peers[n].peer_id for n in names]
    await peers_active(platform, peers)
    body = {
        "name": "async-uneven",
        "dataset_id": dataset_id,
        "peers": peers,
        "model": MODEL,
        "training": {**TRAINING, "rounds": ROUNDS},
        "aggregation": {"mode": "async", "buffer_size": K, "max_staleness": MAX_STALENESS},
        "sharding": {"strategy": "iid"},
    }
    job_id = await create_job(platform, body)
    job = await finished(platform, job_id, timeout=600)
    assert job["state"] == "completed", job

    events = await job_events(http, job_id)  # type: ignore[arg-type]
    closed = [e["data"] for e in events if e["type"] == "round.closed"]
    assert [c["round"] for c in closed] == list(range(1, ROUNDS + 1))
    for c in closed:
        assert c["reason"] == "buffered" and len(c["included"]) == K
        for u in c["included"]:
            assert 0 <= c["round"] - 1 - u["base_version"] <= MAX_STALENESS
    versions = [e["data"]["version"] for e in events if e["type"] == "model.version_created"]
    assert sorted(versions) == list(range(ROUNDS + 1))
    # every peer kept working: each one's updates went into some version
    included = {u["peer_id"] for c in closed for u in c["included"]}
    accepted = [e["data"] for e in events if e["type"] == "update.accepted"]
    assert len(accepted) >= K * ROUNDS and included <= set(peers)
    # the buffer keeps the model stream's order: a round's updates were accepted in it
    order = {a["task_id"]: k for k, a in enumerate(accepted)}
    for c in closed:
        seen = [order[u["task_id"]] for u in c["included"]]
        assert seen == sorted(seen)
