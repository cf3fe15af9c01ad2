"""Asynchronous rounds (FedBuff) on the platform: three peers of different speeds
(``peertrain-peer run --slowdown``), a version every ``buffer_size`` accepted updates.

The digits of the contract suite, uploaded as a user would; real peer processes slowed
by 1, 2 and 4; the job completes, every ``round.closed`` includes exactly K updates in
the order they were accepted, each within the staleness bound, and there is one model
version per round. The replay of such a log is the contract suite's
(``tests/stack/test_async_replay.py``). A calibrated job (``calibration: cached``) stores
with every version the cache of each shard's latest update, read back from MinIO.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from training_support import Platform, create_job, dataset, finished, job_events, peers_active

from peertrain.common.blobs import BlobStore
from peertrain.common.settings import ServiceSettings
from peertrain.ml.aggregation import Calibrated, make_strategy

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "contract"))
from contract_specs import HOLDOUT_FRACTION, LABEL_COLUMN, MODEL, TRAINING, digits_csv

pytestmark = [pytest.mark.stack]

SLOWDOWNS = (1, 2, 4)
K = 2
ROUNDS = 4
MAX_STALENESS = 2


async def _uneven_job(
    platform: Platform, tag: str, aggregation: dict[str, object]
) -> tuple[str, list[str]]:
    """An async job of digits on three new peers slowed by 1, 2 and 4, run to its end."""
    dataset_id = await dataset(
        platform,
        "contract-digits",
        "digits.csv",
        digits_csv(),
        label_column=LABEL_COLUMN,
        holdout_fraction=str(HOLDOUT_FRACTION),
    )
    names = [f"{tag}-x{f}" for f in SLOWDOWNS]
    for name, factor in zip(names, SLOWDOWNS, strict=True):
        env = {"PEERTRAIN_PEER_SLOWDOWN": str(factor)}
        await asyncio.to_thread(platform.peer, name, env=env)
    peers = [platform.peers[n].peer_id for n in names]
    await peers_active(platform, peers)
    body = {
        "name": tag,
        "dataset_id": dataset_id,
        "peers": peers,
        "model": MODEL,
        "training": {**TRAINING, "rounds": ROUNDS},
        "aggregation": {"mode": "async", "buffer_size": K, **aggregation},
        "sharding": {"strategy": "iid"},
    }
    job_id = await create_job(platform, body)
    job = await finished(platform, job_id, timeout=600)
    assert job["state"] == "completed", job
    return job_id, peers


async def test_an_async_job_of_uneven_peers_builds_a_version_every_k_updates(
    platform: Platform, http: object
) -> None:
    aggregation = {"max_staleness": MAX_STALENESS}
    job_id, peers = await _uneven_job(platform, "async-uneven", aggregation)

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


async def test_a_calibrated_async_job_stores_every_shards_latest_update_with_each_version(
    platform: Platform, http: object
) -> None:
    aggregation = {"max_staleness": MAX_STALENESS, "calibration": "cached"}
    job_id, _ = await _uneven_job(platform, "async-cached", aggregation)

    events = await job_events(http, job_id)  # type: ignore[arg-type]
    closed = {e["data"]["round"]: e["data"] for e in events if e["type"] == "round.closed"}
    created = {
        e["data"]["version"]: e["data"] for e in events if e["type"] == "model.version_created"
    }
    assert sorted(created) == list(range(ROUNDS + 1))
    cached: set[str] = set()
    config = ServiceSettings(s3_bucket=platform.bucket).blob_store_config()
    async with BlobStore(config) as blobs:
        for version in range(1, ROUNDS + 1):
            # the cache after version v: the shards of every update included so far
            cached |= {str(u["shard"]) for u in closed[version]["included"]}
            key = created[version]["server_state_key"]
            assert key is not None, created[version]
            strategy = make_strategy({"mode": "async", "buffer_size": K, "calibration": "cached"})
            assert isinstance(strategy, Calibrated)
            strategy.load_state_bytes(await blobs.get_bytes(key))
            assert set(strategy.cache) == cached, version
            assert all(weight > 0 for weight, _ in strategy.cache.values())
