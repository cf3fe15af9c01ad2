"""The platform under a seeded fault schedule (the short version of ``make chaos``).

Two jobs of three peers (30 rounds each) run at once while faults drawn from a seed (one
every 1-5 s) kill, stop and hang RabbitMQ, PostgreSQL, FerretDB, MinIO, the gateway,
every service instance, the peers and the peers' broker link; then every invariant of
:func:`chaos.violations` is checked.
``CHAOS_SEED`` picks the seed (default 1). ``make chaos`` runs the long version.
"""

from __future__ import annotations

import json
import os
from itertools import islice, pairwise

import pytest
from chaos import digits_data, job_body, run_chaos
from chaos_schedule import Target, digest, schedule
from hanging_proxy import ThreadedProxy
from training_support import Platform

TARGETS = [
    Target("rabbitmq", "stack"),
    Target("orchestrator", "service"),
    Target("p0", "peer"),
    Target("peer-amqp", "link"),
]


def test_the_same_seed_draws_the_same_faults_and_keeps_the_rules() -> None:
    first = list(islice(schedule(7, TARGETS), 200))
    assert first == list(islice(schedule(7, TARGETS), 200))
    assert digest(first) != digest(list(islice(schedule(8, TARGETS), 200)))
    for a, b in pairwise(first):
        assert b.at_s >= a.at_s
    for fault in first:
        overlapping = [f for f in first if f.at_s <= fault.at_s < f.until_s and f is not fault]
        assert len(overlapping) < 2  # max_concurrent: at most two faults at once
        assert all(f.target != fault.target for f in overlapping)  # never hit while away
    assert {f.action for f in first} == {"kill", "term", "hang"}
    assert all(f.action == "hang" for f in first if f.kind == "link")
    assert any(b.at_s < a.until_s for a, b in pairwise(first))  # overlaps


@pytest.mark.slow
@pytest.mark.timeout(1800)
async def test_jobs_survive_a_seeded_fault_schedule(
    platform: Platform, link: ThreadedProxy
) -> None:
    report = await run_chaos(
        platform,
        seed=int(os.environ.get("CHAOS_SEED", "1")),
        jobs=2,
        peers_per_job=3,
        rounds=30,
        proxy=link,
        job_body=job_body,
        data=digits_data(),
        timeout_s=1200,
        max_gap_s=5,
    )
    print(json.dumps(report.summary()))
    for fault in report.faults:
        print(fault)
    assert report.faults, "no fault was injected"
    assert report.violations == [], report.violations
