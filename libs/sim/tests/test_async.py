"""Asynchronous rounds (FedBuff) in the simulation: uneven peers, the same accuracy
sooner, and the same bits on every run."""

from __future__ import annotations

import torch

import peertrain.sim as sim
from peertrain.common.events.training import RoundClosed

from .conftest import SPEC, blobs

SLOWDOWNS = (1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 8.0, 8.0)


def _spec(mode: str, rounds: int) -> dict[str, object]:
    aggregation = {"mode": mode, "buffer_size": 4} if mode == "async" else {}
    return {**SPEC, "training": {**SPEC["training"], "rounds": rounds}, "aggregation": aggregation}


def _run(mode: str, rounds: int) -> sim.SimResult:
    data = blobs(rows=960, classes=4, seed=3)
    volunteers = sim.Volunteers(slowdowns=SLOWDOWNS)
    return sim.run(_spec(mode, rounds), data, peers=8, volunteers=volunteers, device="cpu")


def test_async_reaches_the_sync_accuracy_in_less_virtual_time_with_uneven_peers():
    synced = _run("sync", 4)
    buffered = _run("async", 8)
    assert synced.state == buffered.state == "completed", (synced.error, buffered.error)
    target = synced.rounds[-1].accuracy - 0.01
    reached = next(m.virtual_s for m in buffered.rounds if m.accuracy >= target)
    assert reached < synced.rounds[-1].virtual_s
    assert buffered.rounds[-1].accuracy >= target
    closed = [e.data for e in buffered.log.events if isinstance(e.data, RoundClosed)]
    assert all(len(c.included) == 4 and c.reason == "buffered" for c in closed)
    assert any(
        u.base_version is not None and u.base_version < c.round - 1
        for c in closed
        for u in c.included
    )


def test_an_async_run_gives_the_same_bits_every_time():
    first, second = _run("async", 3), _run("async", 3)
    assert first.state == second.state == "completed"
    assert first.state_dict.keys() == second.state_dict.keys()
    assert all(torch.equal(t, second.state_dict[k]) for k, t in first.state_dict.items())
