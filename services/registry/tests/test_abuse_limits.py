"""Issue 12's limits, pure: per-peer rates, spec bounds, removal, own peers first."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest

from peertrain.common.events.peers import DeviceSpecs, GpuSpecs, PeerRemoved, PeerWentOffline
from peertrain.common.security import InvalidToken, Security
from peertrain.registry.domain.floods import FloodWatch
from peertrain.registry.domain.peer import PeerRecord, apply, decide_registered, decide_removed
from peertrain.registry.domain.ratelimit import RateLimiter
from peertrain.registry.domain.selection import visible_to
from peertrain.registry.domain.specs import SpecBounds, spec_problem
from peertrain.registry.usecases.tokens import TokenCache

from .test_peer_aggregate import SPECS, enrolled, fold, recorded
from .test_selection import choose, view, who
from .test_tokens import setup, signed

__all__ = ["setup"]  # the fixture, imported for use here

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_bucket_allows_its_burst_then_its_rate() -> None:
    limiter = RateLimiter(2.0, 3)
    assert [limiter.allow("p", 0.0) for _ in range(4)] == [True, True, True, False]
    assert limiter.allow("q", 0.0)  # another key has its own bucket
    assert not limiter.allow("p", 0.4)  # 0.8 token earned
    assert limiter.allow("p", 0.5) and not limiter.allow("p", 0.5)
    assert [limiter.allow("p", 100.0) for _ in range(4)] == [True, True, True, False]


def test_a_flood_is_counted_per_key_and_per_second() -> None:
    watch = FloodWatch(3)
    assert [watch.refused("flooder", 10.1) for _ in range(4)] == [False, False, True, True]
    assert not watch.refused("other", 10.2)  # another key: its own count
    assert not watch.refused("flooder", 11.0)  # a new second starts again
    watch.forget("flooder")
    assert len(watch) == 1
    small = FloodWatch(1, max_keys=10)
    for i in range(100):
        small.refused(f"k{i}", 0.0)
    assert len(small) <= 10


def test_a_bucket_table_is_bounded() -> None:
    limiter = RateLimiter(1.0, 1, max_keys=10)
    for i in range(100):
        limiter.allow(f"k{i}", 0.0)
    assert len(limiter) <= 10


@pytest.mark.parametrize(
    ("update", "problem"),
    [
        ({"ram_gb": 1e9}, "ram_gb"),
        ({"ram_gb": math.inf}, "ram_gb"),
        ({"disk_free_gb": 1e12}, "disk_free_gb"),
        ({"cpu_cores": 100_000, "cpu_threads": 100_000}, "cpu_cores"),
        ({"cpu_cores": 16, "cpu_threads": 8}, "cpu_cores above cpu_threads"),
        ({"device": "cuda", "gpus": ()}, "without a GPU"),
        ({"device": "cuda", "gpus": (GpuSpecs(name="x", memory_gb=1e6),)}, "gpus[0]"),
    ],
)
def test_unbelievable_specs_are_refused(update: dict[str, Any], problem: str) -> None:
    bad = SPECS.model_copy(update=update)
    found = spec_problem(bad, SpecBounds())
    assert found is not None and problem in found


def test_believable_specs_pass() -> None:
    big = SPECS.model_copy(
        update={"ram_gb": 2048, "device": "cuda", "gpus": (GpuSpecs(name="H200", memory_gb=141),)}
    )
    assert spec_problem(SPECS, SpecBounds()) is None
    assert spec_problem(big, SpecBounds()) is None
    assert spec_problem(DeviceSpecs.model_validate(SPECS.model_dump()), SpecBounds()) is None


def test_removal_goes_offline_first_once_and_the_peer_is_gone() -> None:
    record = fold(enrolled())
    record = PeerRecord(**{**_fields(record), "online": True, "registered": True})
    events = decide_removed(record, "removed", NOW)
    assert [type(e) for e in events] == [PeerWentOffline, PeerRemoved]
    for seq, data in enumerate(events, start=record.version + 1):
        record = apply(record, recorded(data, seq))
    assert record.removed and not record.online
    assert decide_removed(record, "removed", NOW) == []
    assert decide_registered(PeerRecord(**{**_fields(record), "registered": False})) == []
    assert not visible_to(record, who("u", "user", "admin"))


def _fields(record: PeerRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__slots__}


def test_own_peers_rank_before_a_strangers_shared_peer_that_claims_more() -> None:
    hostile = view("h", ram=8000, owner="stranger", shared=True)
    mine = [view("a", ram=8), view("b", ram=16)]
    picked = choose([hostile, *mine], 2, "memory", caller_id="u")
    assert [v.record.peer_id for v in picked] == ["b", "a"]
    picked = choose([hostile, *mine], 3, "gpu", caller_id="u")
    assert picked[-1].record.peer_id == "h"


def test_a_refused_token_is_remembered_without_a_second_signature_check(
    setup: tuple[Security, Any],
) -> None:
    security, key = setup
    cache = TokenCache(security)
    good = signed(key)
    forged = good[: good.rindex(".") + 1] + "A" * 342
    with pytest.raises(InvalidToken):
        cache.verify(forged)
    misses = cache.misses
    with pytest.raises(InvalidToken):
        cache.cached(forged)
    with pytest.raises(InvalidToken):
        cache.verify(forged)
    assert cache.misses == misses
    assert cache.cached(good) is None  # never seen: only a full check can tell
    principal = cache.verify(good)
    assert cache.cached(good) is principal
