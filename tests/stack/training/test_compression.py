"""Compressed updates on the real platform: an ``int8`` and a ``topk`` job complete on
real peers, every ``update.accepted`` records what it weighed (as sent and in float32),
and ``GET /api/jobs/{id}/metrics`` says what each round moved.

That the platform's bits are the simulation's for these kinds is the contract suite's
(``test_contract.py``, cases ``int8-blockwise`` and ``topk-error-feedback``).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from training_support import Platform, create_job, finished, job_events, peers_active

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "contract"))

from contract_specs import MODEL, TRAINING
from test_contract import digits

pytestmark = [pytest.mark.stack]

KINDS = {"int8": {"kind": "int8"}, "topk": {"kind": "topk", "ratio": 0.05}}


async def _job(platform: Platform, dataset_id: str, kind: str, peers: list[str]) -> str:
    body = {
        "name": f"compressed-{kind}",
        "dataset_id": dataset_id,
        "peers": peers,
        "model": MODEL,
        "training": {**TRAINING, "compression": KINDS[kind]},
        "aggregation": {"strategy": "fedavg", "min_peers": len(peers)},
        "sharding": {"strategy": "iid"},
    }
    return await create_job(platform, body)


async def test_compressed_jobs_complete_and_record_the_bytes_they_moved(
    platform: Platform, http: Any
) -> None:
    dataset_id = await digits(platform)
    peers = {kind: [platform.peer(f"c{kind}{i}").peer_id for i in range(2)] for kind in KINDS}
    await peers_active(platform, [p for ps in peers.values() for p in ps])
    jobs = {kind: await _job(platform, dataset_id, kind, peers[kind]) for kind in KINDS}
    ended = await asyncio.gather(*(finished(platform, j, timeout=300) for j in jobs.values()))
    assert [j["state"] for j in ended] == ["completed"] * len(KINDS), ended

    bad = {**TRAINING, "compression": {"kind": "topk", "ratio": 0}}
    r = await http.post("/api/jobs", json={"name": "x", "dataset_id": dataset_id,
                                            "peers": peers["int8"], "training": bad})  # fmt: skip
    assert r.status_code in (400, 422), r.text
    assert "compression" in r.text

    for kind, job_id in jobs.items():
        events = await job_events(http, job_id)
        accepted = [e["data"] for e in events if e["type"] == "update.accepted"]
        assert {a["round"] for a in accepted} == set(range(1, TRAINING["rounds"] + 1))
        assert {a["compression"] for a in accepted} == {kind}
        assert all(a["size"] < a["dense_size"] for a in accepted), accepted
        metrics = (await http.get(f"/api/jobs/{job_id}/metrics")).json()
        assert metrics["compression"] == kind
        versions = {e["data"]["version"]: e["data"]["size"] for e in events
                    if e["type"] == "model.version_created"}  # fmt: skip
        for r in metrics["rounds"]:
            this = [a for a in accepted if a["round"] == r["round"]]
            assert r["bytes_up"] == sum(a["size"] for a in this)
            assert r["bytes_up_dense"] == sum(a["dense_size"] for a in this)
            assert r["bytes_down_per_peer"] == versions[r["round"] - 1]
