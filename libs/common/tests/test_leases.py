"""The pure part of leases: which instance a job prefers (rendezvous hashing)."""

from __future__ import annotations

from collections import Counter

from peertrain.common.leases import preferred


def test_jobs_spread_evenly_over_members() -> None:
    members = {"a", "b", "c"}
    counts = Counter(preferred(f"job-{i}", members) for i in range(3000))
    assert set(counts) == members
    assert all(800 < n < 1200 for n in counts.values()), counts


def test_a_member_leaving_moves_only_its_own_jobs() -> None:
    jobs = [f"job-{i}" for i in range(1000)]
    before = {j: preferred(j, {"a", "b", "c"}) for j in jobs}
    after = {j: preferred(j, {"a", "b"}) for j in jobs}
    moved = {j for j in jobs if before[j] != after[j]}
    assert moved == {j for j in jobs if before[j] == "c"}


def test_no_members_no_preference() -> None:
    assert preferred("job", set()) is None
