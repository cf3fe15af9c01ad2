"""Leases on the in-memory store, by a clock the tests move: claims, expiry, renewal,
membership, hand-over, takeover, release and the sweep (the stack test runs the same
on FerretDB); and which instance a job prefers (rendezvous hashing)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from peertrain.common.clock import Clock
from peertrain.common.leases import (
    MEMBER,
    Lease,
    Leases,
    LeaseSettings,
    MemoryLeaseStore,
    SoleInstance,
    leases_for,
    preferred,
)

TTL = 8.0  # quarters and fifths of it are exact in binary

T = TypeVar("T")


class FakeClock(Clock):
    """Both clocks at once, moved by the test."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=self.t)

    def advance(self, seconds: float) -> None:
        self.t += seconds


class CountingStore(MemoryLeaseStore):
    """Counts full reads (one per renewal that touched the store)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def read_all(self) -> list[Lease]:
        self.reads += 1
        return await super().read_all()


def instances(
    store: MemoryLeaseStore, clock: FakeClock, *names: str, ttl_s: float = TTL
) -> list[Leases]:
    return [Leases(store, name, ttl_s, clock=clock) for name in names]


def key_preferring(member: str, members: set[str]) -> str:
    return next(f"job-{i}" for i in range(100) if preferred(f"job-{i}", members) == member)


# -- preferred ---------------------------------------------------------------------------


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


# -- claims and expiry -------------------------------------------------------------------


async def test_a_claim_is_stored_and_counted_on_until_a_fifth_of_a_ttl_early() -> None:
    store, clock = MemoryLeaseStore(), FakeClock()
    (a,) = instances(store, clock, "a")
    assert await a.claim("job-1", force=True)
    lease = store.leases["job-1"]
    assert (lease.holder, lease.until) == ("a", clock.now() + timedelta(seconds=TTL))
    assert lease.token
    clock.advance(TTL * 0.8 - 0.5)
    assert a.holds("job-1") and a.held == ["job-1"]
    clock.advance(1.0)
    assert not a.holds("job-1") and a.held == []
    assert await a.claim("job-1", force=True)  # still its own in the store: renewed
    assert store.leases["job-1"].until == clock.now() + timedelta(seconds=TTL)
    assert store.leases["job-1"].token == lease.token


async def test_one_holder_at_a_time_and_takeover_after_expiry() -> None:
    store, clock = MemoryLeaseStore(), FakeClock()
    a, b = instances(store, clock, "a", "b")
    assert await a.claim("job-1", force=True)
    assert not await b.claim("job-1", force=True)  # held, not expired
    assert a.holds("job-1") and not b.holds("job-1")
    clock.advance(TTL / 2)
    await a.keep(["job-1"])  # renewed
    clock.advance(TTL * 0.9)
    assert not await b.claim("job-1", force=True)  # first lease's time is over, not the renewal's
    clock.advance(TTL * 0.2)  # a stopped renewing (it died)
    assert not a.holds("job-1")
    assert await b.claim("job-1", force=True)
    assert store.leases["job-1"].holder == "b" and b.held == ["job-1"]
    await a.keep(["job-1"])  # a learns it lost the lease, and does not take it back
    assert not a.holds("job-1") and a.held == []
    assert store.leases["job-1"].holder == "b"


async def test_only_the_preferred_instance_claims_unforced() -> None:
    store, clock = MemoryLeaseStore(), FakeClock()
    a, b = instances(store, clock, "a", "b")
    await a.keep([])
    await b.keep([])
    clock.advance(TTL / 4)
    await a.keep([])  # each has read the other's membership
    assert a.members == b.members == {"a", "b"}
    job = key_preferring("b", {"a", "b"})
    assert not await a.claim(job)
    assert job not in store.leases
    assert await b.claim(job)
    assert store.leases[job].holder == "b"


async def test_a_refused_claim_asks_the_store_again_only_after_half_a_ttl() -> None:
    store, clock = MemoryLeaseStore(), FakeClock()
    a, b = instances(store, clock, "a", "b")  # each alone as far as it knows: both prefer
    assert await a.claim("job-1")
    assert not await b.claim("job-1")
    await a.release("job-1")
    assert not await b.claim("job-1")  # known to be held elsewhere: not asked
    assert await b.claim("job-1", force=True)  # forced: asked
    await b.release("job-1")
    assert await a.claim("job-1")
    assert not await b.claim("job-1")
    await a.release("job-1")
    clock.advance(TTL / 2)
    assert await b.claim("job-1")


async def test_instances_racing_for_one_lease_get_one_holder() -> None:
    store, clock = MemoryLeaseStore(), FakeClock()
    racers = instances(store, clock, *(f"i{n}" for n in range(12)))
    long_ago = clock.now() - timedelta(seconds=30)
    assert await store.create(Lease("expired", "dead", long_ago))  # an old one: no token
    for key in ("free", "expired"):
        won = await asyncio.gather(*(r.claim(key, force=True) for r in racers))
        assert sum(won) == 1, (key, won)
        holder = racers[won.index(True)].holder
        assert store.leases[key].holder == holder
        assert [r.holder for r in racers if r.holds(key)] == [holder]


# -- renewal, membership, hand-over ------------------------------------------------------


async def test_keep_touches_the_store_every_quarter_ttl_or_at_once_for_an_unknown_job() -> None:
    store, clock = CountingStore(), FakeClock()
    (a,) = instances(store, clock, "a")
    assert await a.keep(["job-1"]) == ["job-1"]
    assert store.reads == 1
    clock.advance(TTL / 8)
    assert await a.keep(["job-1"]) == []
    assert store.reads == 1  # settled, not due
    assert await a.keep(["job-1", "job-2"]) == ["job-2"]
    assert store.reads == 2  # job-2 is nobody's as far as a knows
    clock.advance(TTL / 4)
    await a.keep(["job-1", "job-2"])
    assert store.reads == 3
    assert store.leases["job-1"].until == clock.now() + timedelta(seconds=TTL)


async def test_renewed_leases_stay_held_for_as_long_as_keep_runs() -> None:
    store, clock = MemoryLeaseStore(), FakeClock()
    a, b = instances(store, clock, "a", "b")
    assert await a.keep(["job-1"]) == ["job-1"]
    for _ in range(20):  # five TTLs
        clock.advance(TTL / 4)
        assert await a.keep(["job-1"]) == []
        assert a.held == ["job-1"]
        assert not await b.claim("job-1", force=True)
    assert store.leases[MEMBER + "a"].until == clock.now() + timedelta(seconds=TTL)


async def test_live_members_share_the_jobs_and_a_stopped_ones_jobs_move() -> None:
    store, clock = MemoryLeaseStore(), FakeClock()
    a, b = instances(store, clock, "a", "b")
    jobs = [f"job-{i}" for i in range(24)]
    assert sorted(await a.keep(jobs)) == sorted(jobs)  # a alone: it takes every job
    shares = {m: {j for j in jobs if preferred(j, {"a", "b"}) == m} for m in "ab"}
    assert shares["a"] and shares["b"]
    joined_at = clock.t
    while (set(a.held), set(b.held)) != (shares["a"], shares["b"]):  # b joins
        assert clock.t - joined_at < 3 * TTL, (sorted(a.held), sorted(b.held))
        await b.keep(jobs)
        await a.keep(jobs)
        assert not set(a.held) & set(b.held)
        clock.advance(TTL / 4)
    assert clock.t - joined_at > TTL  # not before b was live for a lease's time
    assert a.members == b.members == {"a", "b"}
    stopped_at = clock.t
    while len(b.held) < len(jobs):  # a stops; b renews
        assert clock.t - stopped_at < 3 * TTL, sorted(b.held)
        await b.keep(jobs)
        clock.advance(TTL / 4)
    assert clock.t - stopped_at > TTL  # a's leases ran out first
    assert b.members == {"b"}
    assert sorted(b.held) == sorted(jobs)


async def test_a_job_its_preferred_instance_never_takes_goes_to_another_after_a_ttl() -> None:
    store, clock = MemoryLeaseStore(), FakeClock()
    a, b = instances(store, clock, "a", "b")
    await b.keep([])
    await a.keep([])
    job = key_preferring("b", {"a", "b"})  # b never hears of it
    seen_at = clock.t
    while not await a.keep([job]):
        assert clock.t - seen_at <= TTL
        assert job not in store.leases
        clock.advance(TTL / 4)
        await b.keep([])
    assert clock.t - seen_at > TTL
    assert a.held == [job] and store.leases[job].holder == "a"


# -- release and the sweep ---------------------------------------------------------------


async def test_a_released_lease_is_free_at_once() -> None:
    store, clock = MemoryLeaseStore(), FakeClock()
    a, b = instances(store, clock, "a", "b")
    assert await a.claim("job-1", force=True)
    await a.release("job-1")
    assert "job-1" not in store.leases and a.held == []
    assert await b.claim("job-1", force=True)
    await a.release("job-1")  # not a's any more: b's lease stays
    assert store.leases["job-1"].holder == "b"


async def test_release_all_lets_others_take_over_at_once() -> None:
    store, clock = MemoryLeaseStore(), FakeClock()
    a, b = instances(store, clock, "a", "b", ttl_s=60)
    await a.keep([])
    await b.keep([])
    jobs = [f"job-{i}" for i in range(8)]
    for job in jobs:
        assert await a.claim(job, force=True)
    assert not await b.claim(jobs[0], force=True)
    await a.release_all()  # a clean shutdown
    assert a.held == []
    assert not [lease for lease in store.leases.values() if lease.holder == "a"]
    taken = await b.keep(jobs)
    assert sorted(taken) == sorted(jobs) and b.members == {"b"}


async def test_a_dead_holders_lease_of_an_ended_job_is_swept() -> None:
    store, clock = MemoryLeaseStore(), FakeClock()
    a, b = instances(store, clock, "a", "b")
    await a.keep([])
    assert await a.claim("job-ended", force=True)
    await b.keep([])  # the job ended; a dies before it lets go: nobody claims it again
    clock.advance(TTL * 1.5)
    await b.keep([])
    assert "job-ended" in store.leases  # expired, but not for a whole TTL yet
    clock.advance(TTL * 0.75)
    await b.keep([])
    assert "job-ended" not in store.leases
    assert MEMBER + "a" in store.leases  # a membership goes only after ten TTLs
    clock.advance(TTL * 9)
    await b.keep([])
    assert set(store.leases) == {MEMBER + "b"}


async def after(turns: int, step: Awaitable[T]) -> T:
    """``step``, started ``turns`` turns of the event loop late (not a wait: an order)."""
    for _ in range(turns):
        await asyncio.sleep(0)
    return await step


async def test_a_takeover_and_a_sweep_of_one_lease_never_both_act() -> None:
    outcomes: set[bool] = set()
    for lead in range(-5, 6):  # the sweep's head start (< 0: the takeover's)
        store, clock = MemoryLeaseStore(), FakeClock()
        a, b, c = instances(store, clock, "a", "b", "c")
        assert await a.claim("job-1", force=True)
        clock.advance(TTL * 2.5)  # a died a while ago
        _, taken = await asyncio.gather(
            after(max(-lead, 0), b.keep([])), after(max(lead, 0), c.claim("job-1", force=True))
        )
        lease = store.leases.get("job-1")
        assert taken == c.holds("job-1") == (lease is not None), lead
        assert lease is None or lease.holder == "c", lead
        outcomes.add(taken)
    assert outcomes == {True, False}  # each side won the race at least once


# -- the simulation's sole instance ------------------------------------------------------


async def test_without_a_database_the_sole_instance_holds_every_job() -> None:
    sole = leases_for(None, LeaseSettings(instance_name="sim"))
    assert isinstance(sole, SoleInstance)
    assert sole.holds("job-1")
    assert await sole.keep(["job-1", "job-2"]) == ["job-1", "job-2"]
    assert await sole.keep(["job-1", "job-2"]) == []
    await sole.release_all()
    assert sole.held == []
