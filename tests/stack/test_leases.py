"""Leases (``peertrain.common.leases``) on the real MongoDB-wire server: one holder per
job, takeover after expiry, membership and the spread of jobs over instances."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.mongo_client import AsyncMongoClient

from peertrain.common.leases import Leases, MongoLeaseStore, preferred

TTL = 1.5


@pytest.fixture
async def table(
    mongo: AsyncMongoClient[dict[str, Any]], run_id: str
) -> AsyncIterator[AsyncCollection[dict[str, Any]]]:
    collection = mongo[f"{run_id}_leases"][f"leases_{uuid.uuid4().hex[:8]}"]
    yield collection
    await collection.drop()
    await collection.database[f"{collection.name}_claims"].drop()


async def test_one_holder_at_a_time_and_takeover_after_expiry(
    table: AsyncCollection[dict[str, Any]],
) -> None:
    a, b = Leases(MongoLeaseStore(table), "a", TTL), Leases(MongoLeaseStore(table), "b", TTL)
    assert await a.claim("job-1", force=True)
    assert not await b.claim("job-1", force=True)  # held, not expired
    assert a.holds("job-1") and not b.holds("job-1")
    await a.keep(["job-1"])  # renewed
    assert not await b.claim("job-1", force=True)
    await asyncio.sleep(TTL * 1.2)  # a stops renewing (it died)
    assert not a.holds("job-1")  # a stops counting on it by its own clock first
    assert await b.claim("job-1", force=True)
    assert (await table.find_one({"_id": "job-1"}) or {})["holder"] == "b"
    await a.keep(["job-1"])  # a learns it lost the lease, and does not take it back
    assert not a.holds("job-1") and a.held == []


async def test_live_members_share_the_jobs_and_a_stopped_ones_jobs_move(
    table: AsyncCollection[dict[str, Any]],
) -> None:
    jobs = [f"job-{i}" for i in range(24)]
    a, b = Leases(MongoLeaseStore(table), "a", TTL), Leases(MongoLeaseStore(table), "b", TTL)
    await a.keep(jobs)  # a alone: it takes every job
    assert sorted(a.held) == sorted(jobs)
    shares = {m: {j for j in jobs if preferred(j, {"a", "b"}) == m} for m in "ab"}
    joined_at = time.monotonic()
    deadline = joined_at + 60  # (a slow machine: the store may take its time)
    # b joins; a hands b's share over. On a loaded machine some of a's leases can run
    # out between two of its renewals, so b may take a few before the rest: wait for
    # the split itself, checking on the way that no job is ever held twice.
    while (set(a.held), set(b.held)) != (shares["a"], shares["b"]):
        assert time.monotonic() < deadline, (sorted(a.held), sorted(b.held))
        await b.keep(jobs)
        await a.keep(jobs)
        assert not set(a.held) & set(b.held)
        await asyncio.sleep(TTL / 4)
    assert time.monotonic() - joined_at > TTL  # not before b was live for a lease's time
    assert a.members == b.members == {"a", "b"}
    assert shares["a"] and shares["b"]  # spread (24 jobs: one side empty has odds 2**-23)
    stopped_at = time.monotonic()
    deadline = stopped_at + 60
    while len(b.held) < len(jobs) and time.monotonic() < deadline:  # a stops; b renews
        await b.keep(jobs)
        await asyncio.sleep(TTL / 4)
    assert time.monotonic() - stopped_at > TTL  # a's leases ran out first
    assert b.members == {"b"}
    assert sorted(b.held) == sorted(jobs)


async def test_release_all_lets_others_take_over_at_once(
    table: AsyncCollection[dict[str, Any]],
) -> None:
    a, b = Leases(MongoLeaseStore(table), "a", 60), Leases(MongoLeaseStore(table), "b", 60)
    await a.keep([])
    await b.keep([])
    jobs = [f"job-{i}" for i in range(8)]
    for job in jobs:
        assert await a.claim(job, force=True)
    assert not await b.claim(jobs[0], force=True)
    await a.release_all()  # a clean shutdown
    assert await table.count_documents({"holder": "a"}) == 0
    taken = await b.keep(jobs)
    assert sorted(taken) == sorted(jobs) and b.members == {"b"}


async def test_a_dead_holders_lease_of_an_ended_job_is_swept(
    table: AsyncCollection[dict[str, Any]],
) -> None:
    a, b = Leases(MongoLeaseStore(table), "a", TTL), Leases(MongoLeaseStore(table), "b", TTL)
    assert await a.claim("job-ended", force=True)
    await b.keep([])  # the job ended; a dies before it lets go: nobody claims it again
    assert await table.find_one({"_id": "job-ended"}) is not None  # not expired yet
    deadline = time.monotonic() + 60
    while await table.find_one({"_id": "job-ended"}) is not None:
        assert time.monotonic() < deadline, "the dead holder's lease is still there"
        await b.keep([])
        await asyncio.sleep(TTL / 4)
    assert (await table.find_one({"_id": "member:b"}) or {}).get("holder") == "b"


async def test_instances_racing_for_one_lease_get_one_holder(
    table: AsyncCollection[dict[str, Any]],
) -> None:
    """FerretDB runs a conditional update as a query then a write: instances that all
    read a lease as expired could all take it. Taking one is a unique insert."""
    racers = [Leases(MongoLeaseStore(table), f"i{n}", 60) for n in range(12)]
    for trial in range(4):
        free, expired = f"free-{trial}", f"expired-{trial}"
        long_ago = datetime.now(UTC) - timedelta(seconds=30)
        await table.insert_one({"_id": expired, "holder": "dead", "until": long_ago})
        for key in (free, expired):
            won = await asyncio.gather(*(r.claim(key, force=True) for r in racers))
            assert sum(won) == 1, (key, won)
            holder = racers[won.index(True)].holder
            assert (await table.find_one({"_id": key}) or {})["holder"] == holder
            assert [r.holder for r in racers if r.holds(key)] == [holder]
