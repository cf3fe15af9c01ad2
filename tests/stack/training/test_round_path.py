"""The round path on a platform of two orchestrators and two aggregators (the training
tests' platform): every task reaches its peer once, and every round's model version is
made from the holder's running sum, not rebuilt from the bucket at the round's close:
made as soon as that sum has every task's update, before the round's close arrives.

Before, ``task.assigned`` went to one shared queue, and the orchestrator that had not
assigned a task sent it a second time whenever the queue gave it to that one (about
half the tasks); and the updates the aggregator not holding the job checked were
missing from the holder's running sum, so their rounds were rebuilt at close. Both
are read from the instances' own ``/metrics``.
"""

from __future__ import annotations

import pytest
from test_mnist import mnist, mnist_job
from training_support import (
    Platform,
    create_job,
    finished,
    instances_metric,
    job_events,
    peers_active,
)

pytestmark = [pytest.mark.stack]

SENT = "peertrain_tasks_dispatched_total"
MADE = "peertrain_aggregator_round_seconds_count"
ROUNDS = 3


def counts(p: Platform) -> tuple[float, float, float]:
    """Task messages the orchestrators sent; versions the aggregators made on their
    running sums before the rounds closed, and rebuilt from the bucket."""
    return (
        instances_metric(p, "orchestrator", SENT, kind="task"),
        instances_metric(p, "aggregator", MADE, path="early"),
        instances_metric(p, "aggregator", MADE, path="rebuilt"),
    )


async def test_each_task_is_sent_once_and_each_round_closes_on_its_running_sum(
    platform: Platform,
) -> None:
    dataset_id = await mnist(platform)
    peers = [platform.peer(f"p{i}").peer_id for i in range(2)]
    await peers_active(platform, peers)
    sent, early, rebuilt = counts(platform)
    body = mnist_job(dataset_id, peers, rounds=ROUNDS)
    body["name"] = "round-path"
    body["model"] = {"arch": "mlp", "hidden": [32]}
    job_id = await create_job(platform, body)
    job = await finished(platform, job_id)
    assert job["state"] == "completed", job
    async with platform.client() as http:
        events = await job_events(http, job_id)
    assigned = [e for e in events if e["type"] == "task.assigned"]
    assert len(assigned) >= 2 * ROUNDS
    after = counts(platform)
    assert after[0] - sent == len(assigned)  # no task sent twice
    assert (after[1] - early, after[2] - rebuilt) == (ROUNDS, 0)
