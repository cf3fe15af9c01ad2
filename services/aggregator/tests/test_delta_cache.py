"""The decoded deltas kept for rounds made again: a budget in bytes, least recently used
out first, a job's dropped when it ends."""

from __future__ import annotations

import torch

from peertrain.aggregator.usecases.storage import DeltaCache


def _delta(values: int) -> dict[str, torch.Tensor]:
    return {"w": torch.zeros(values, dtype=torch.float32)}  # 4 bytes a value


def test_the_least_recently_used_go_first_within_the_budget() -> None:
    cache = DeltaCache(max_bytes=3 * 400)
    for k in "abc":
        cache.put("j1", k, "sha", _delta(100))
    assert cache.get("a", "sha") is not None  # a is now the most recent
    cache.put("j1", "d", "sha", _delta(100))
    assert cache.get("b", "sha") is None and len(cache) == 3 and cache.bytes == 1200
    assert cache.get("a", "other sha") is None  # the same key, other bytes: not this one


def test_one_larger_than_the_budget_is_not_kept_and_none_with_no_budget() -> None:
    cache = DeltaCache(max_bytes=400)
    cache.put("j1", "big", "sha", _delta(101))
    assert len(cache) == 0 and cache.bytes == 0
    off = DeltaCache(max_bytes=0)
    off.put("j1", "a", "sha", _delta(1))
    assert off.get("a", "sha") is None


def test_an_ended_jobs_deltas_are_dropped() -> None:
    cache = DeltaCache(max_bytes=10_000)
    cache.put("j1", "a", "sha", _delta(10))
    cache.put("j2", "b", "sha", _delta(10))
    cache.forget("j1")
    assert cache.get("a", "sha") is None and cache.get("b", "sha") is not None
    assert cache.bytes == 40
