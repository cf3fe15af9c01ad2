"""Checked work on the real stack: lazy peers that send plausible updates (all zeros;
trained on a tenth of the shard) are found by training their tasks twice
(``aggregation.verify``), struck and excluded; the job completes; no honest peer is
struck; no lazy update is ever aggregated. In synchronous rounds and in asynchronous
ones."""

from __future__ import annotations

from typing import Any

import pytest
from test_mnist import mnist, mnist_job
from training_support import Platform, create_job, finished, job_events, peers_active

pytestmark = [pytest.mark.stack, pytest.mark.slow]

ROUNDS = 5
ASYNC_VERSIONS = 8
HONEST = ["p0", "p1", "p2", "p3"]
LAZY = {"zeros": "zeros", "tenth": "tenth"}


async def lazy_job(
    platform: Platform, http: Any, name: str, rounds: int, **aggregation: Any
) -> tuple[list[dict[str, Any]], set[str]]:
    """A completed MNIST job of the honest and the lazy peers, with ``verify`` on: its
    events, and the lazy peers' ids, checked to be excluded, every honest pair of
    updates agreeing and every strike a lazy peer's."""
    dataset_id = await mnist(platform)
    names = [*HONEST, *LAZY]
    peers = [platform.peer(n, **({"mode": LAZY[n]} if n in LAZY else {})).peer_id for n in names]
    await peers_active(platform, peers)
    job = mnist_job(dataset_id, peers, rounds=rounds, seed=5)
    job["name"] = name
    job["model"] = {"arch": "mlp", "hidden": [64]}
    job["aggregation"].update(round_deadline_s=120, verify={"share": 0.05}, **aggregation)
    job_id = await create_job(platform, job)
    done = await finished(platform, job_id)
    assert done["state"] == "completed", done

    lazy = {platform.peers[n].peer_id for n in LAZY}
    events = await job_events(http, job_id)
    excluded = {e["data"]["peer_id"] for e in events if e["type"] == "peer.excluded"}
    assert excluded == lazy, _story(events)
    checks = [e["data"] for e in events if e["type"] == "update.checked"]
    honest_pairs = [c for c in checks if not {c["peer_id"], c["other_peer_id"]} & lazy]
    assert honest_pairs and all(c["agree"] for c in honest_pairs)  # other processes, agree
    assert max(c["distance"] for c in honest_pairs) < 1e-3
    # no honest strike: every refusal that counts is a lazy peer's
    rejected = [e["data"] for e in events if e["type"] == "update.rejected" and e["data"]["strike"]]
    assert {r["peer_id"] for r in rejected} <= lazy
    return events, lazy


async def test_lazy_peers_are_struck_excluded_and_never_aggregated_and_the_job_completes(
    platform: Platform, http: Any
) -> None:
    events, lazy = await lazy_job(platform, http, "mnist-verify", ROUNDS)
    checks = [e["data"] for e in events if e["type"] == "update.checked"]
    assert all(not c["agree"] for c in checks if {c["peer_id"], c["other_peer_id"]} & lazy)
    # one update per shard, and never a lazy one: a struck update makes way for the
    # confirmed one of its group, and one nobody confirmed sits its round out
    closed = [e["data"] for e in events if e["type"] == "round.closed"]
    for c in closed:
        shards = [u["shard"] for u in c["included"]]
        assert len(shards) == len(set(shards))
    assert not {u["peer_id"] for c in closed for u in c["included"]} & lazy, _story(events)


async def test_in_asynchronous_rounds_no_lazy_update_is_ever_aggregated(
    platform: Platform, http: Any
) -> None:
    """``aggregation.mode: async``: a checked update waits out of the buffer for its
    check, so a lazy peer's updates (every one checked: probation, then escalation) never
    reach a version; the lazy peers are excluded, honest ones never struck."""
    events, lazy = await lazy_job(
        platform, http, "mnist-verify-async", ASYNC_VERSIONS, mode="async", buffer_size=3
    )
    closed = [e["data"] for e in events if e["type"] == "round.closed"]
    assert len(closed) == ASYNC_VERSIONS and all(c["reason"] == "buffered" for c in closed)
    # a lazy update struck by its check makes way for the checker's, in its place
    assert not {u["peer_id"] for c in closed for u in c["included"]} & lazy, _story(events)


def _story(events: list[dict[str, Any]]) -> str:
    """The checks of the job, for a failure's message."""
    kinds = ("round.opened", "task.assigned", "update.checked", "peer.excluded", "round.closed")
    lines = []
    for e in events:
        if e["type"] in kinds:
            d = e["data"]
            brief = {k: d.get(k) for k in ("round", "task_id", "peer_id", "checks", "agree")}
            lines.append(f"{e['type']} {brief}")
    return "\n".join(lines)[-6000:]
