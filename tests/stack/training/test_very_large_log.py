"""A log of a million events: a whole job completes, and the services restart and replay.

The log is pre-filled with 1,000,000 events (``peertrain.testkit.common.prefill``: real
documents of a catalogued type no service folds, at positions claimed from the log's
own allocator; each batch's first through FerretDB, its copies written in PostgreSQL)
while the platform runs. Nothing on a round's path, a request's path or
a start-up replay may cost time that grows with the log, so a job runs as it does on an
empty log, and every service comes back from a restart with its state: jobs
(orchestrator), model versions (aggregator), peers (registry), datasets (dataset).

This module runs last among the training tests (its name sorts last), so the others
keep their small log.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from test_mnist import mnist, mnist_job
from training_support import Platform, create_job, finished, peers_active

from peertrain.common.eventlog import EventLog
from peertrain.common.settings import ServiceSettings
from peertrain.testkit.common.prefill import PER_STREAM, FerretPostgres, prefill, prefilled

pytestmark = [pytest.mark.stack, pytest.mark.slow]

LOG_EVENTS = 1_000_000
RESTARTED = ("registry", "dataset", "orchestrator", "aggregator")


def small_job(dataset_id: str, peers: list[str], name: str) -> dict[str, Any]:
    job = mnist_job(dataset_id, peers, rounds=3, seed=5)
    job["name"] = name
    job["model"] = {"arch": "mlp", "hidden": [32]}
    job["aggregation"]["min_peers"] = len(peers)
    return job


@pytest.mark.timeout(2400)
async def test_a_job_completes_and_services_replay_on_a_log_of_a_million_events(
    platform: Platform, http: Any
) -> None:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        ServiceSettings().mongo_url, tz_aware=True
    )
    try:
        db = client[platform.mongo_db]
        # Each batch's first event through FerretDB, its copies in PostgreSQL (FerretDB's
        # conversion and pymongo's encoding were 60% of the pre-fill's CPU).
        sql = FerretPostgres.local()
        assert sql is not None, "psql of deploy/local/postgres.sh not found"
        await prefill(db, LOG_EVENTS, sql=sql)
        assert await prefilled(db) >= LOG_EVENTS
        # The first and the last pre-filled streams are whole: the log holds them all,
        # as events, each caused by the one before, in one correlation. (Not a count of
        # the collection: FerretDB counts by reading every document, over a minute at
        # this size.)
        log = EventLog(db)
        for stream in (0, LOG_EVENTS // PER_STREAM - 1):
            stored = await log.read_stream(f"bench:prefill-{stream}")
            assert [e.seq for e in stored] == list(range(1, PER_STREAM + 1)), stream
            assert [e.data.n for e in stored] == [  # type: ignore[union-attr]
                stream * PER_STREAM + k for k in range(PER_STREAM)
            ]
            assert stored[0].causation_id is None
            assert all(b.causation_id == a.id for a, b in itertools.pairwise(stored))
            assert len({e.correlation_id for e in stored}) == 1
            assert len({e.id for e in stored}) == PER_STREAM
    finally:
        await client.close()

    dataset_id = await mnist(platform)
    peers = [platform.peer(f"p{i}").peer_id for i in range(2)]
    await peers_active(platform, peers)
    job_id = await create_job(platform, small_job(dataset_id, peers, "large-log"))
    job = await finished(platform, job_id)
    assert job["state"] == "completed", job

    # Every service but auth (shared by the session) restarts and replays the log.
    for name in RESTARTED:
        platform.services[name].stop()
    for name in RESTARTED:
        platform.services[name].start(timeout=600)

    again = (await http.get(f"/api/jobs/{job_id}")).json()
    assert again["state"] == "completed", again
    assert again["latest"] == job["latest"]
    models = await http.get(f"/api/models/{job_id}")
    assert models.status_code == 200, models.text
    assert models.json()["final"] is not None
    dataset = (await http.get(f"/api/datasets/{dataset_id}")).json()
    assert dataset["status"] == "validated", dataset
    await peers_active(platform, peers)

    second = await create_job(platform, small_job(dataset_id, peers, "large-log-after-restart"))
    done = await finished(platform, second)
    assert done["state"] == "completed", done
