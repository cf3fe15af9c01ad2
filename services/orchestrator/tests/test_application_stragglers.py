"""Over-selection driven as the platform drives the orchestrator (in-memory ports): the
round closes on its first ``n`` updates, and the surplus task's peer is told to stop."""

from __future__ import annotations

import pytest

from peertrain.common.errors import PeerTrainError
from peertrain.common.events.tasks import CancelMessage
from peertrain.common.events.training import TaskLost
from peertrain.orchestrator.domain.job_request import JobRequest

from .test_application import PEERS, USER, accepted, ready_platform, running, tasks


async def test_a_round_closes_on_n_and_its_surplus_peer_is_told_to_stop() -> None:
    p, job = await running({"over_select": 1, "min_peers": 1})
    sent = tasks(p)
    assert len(sent) == len(PEERS)  # n + m = 1 + 1 tasks
    (fast, fast_task), (slow, slow_task) = sent
    await p.append(f"model:{job.job_id}", accepted(fast_task, fast), producer="aggregator")
    rnd = job.rounds[(1, 1)]
    assert rnd.state == "closed" and rnd.close_reason == "complete"
    assert list(rnd.accepted) == [fast_task.shard]
    (lost,) = [e.data for e in p.log.events if isinstance(e.data, TaskLost)]
    assert (lost.task_id, lost.peer_id, lost.reason) == (slow_task.task_id, slow, "surplus")
    cancels = [m for m in p.publisher.sent if m.routing_key.endswith(".cancel")]
    assert [m.routing_key for m in cancels] == [f"peer.{slow}.cancel"]
    cancel = CancelMessage.model_validate_json(cancels[0].body)
    assert (cancel.task_id, cancel.reason) == (slow_task.task_id, "surplus")
    assert job.strikes == {}


async def test_over_select_that_leaves_too_few_to_close_on_is_refused() -> None:
    p = await ready_platform()
    request = JobRequest.model_validate(
        {
            "name": "j",
            "dataset_id": "d1",
            "peers": list(PEERS),
            "model": {"arch": "logreg"},
            "aggregation": {"over_select": 1, "min_peers": 2},
        }
    )
    with pytest.raises(PeerTrainError) as caught:
        await p.app.create_job(request, USER)
    detail = str(caught.value.detail)
    assert "aggregation.over_select" in detail
    assert "leaves 1 of the job's 2 peer(s) to close a round on, fewer than min_peers=2" in detail


async def test_verify_with_top_k_compression_is_refused() -> None:
    p = await ready_platform()
    request = JobRequest.model_validate(
        {
            "name": "j",
            "dataset_id": "d1",
            "peers": list(PEERS),
            "model": {"arch": "logreg"},
            "training": {"compression": {"kind": "topk"}},
            "aggregation": {"verify": {"share": 0.1}},
        }
    )
    with pytest.raises(PeerTrainError) as caught:
        await p.app.create_job(request, USER)
    detail = str(caught.value.detail)
    assert "aggregation.verify" in detail
    assert "verify cannot check top-k compressed updates" in detail
