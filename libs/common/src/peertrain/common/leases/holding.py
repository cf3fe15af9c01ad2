"""Which jobs this instance works on: :class:`Leases` (the book over a store, by a
clock), or :class:`SoleInstance` (the simulation's only instance)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal, Protocol

import structlog

from peertrain.common.clock import Clock

from .book import MEMBER, Lease, LeaseBook
from .mongo import MongoLeaseStore
from .settings import LeaseSettings
from .store import LeaseStore

__all__ = ["Holding", "Leases", "SoleInstance", "leases_for", "pass_on_to_holder"]

log = structlog.get_logger(__name__)


def _token() -> str:
    return uuid.uuid4().hex


class Holding(Protocol):
    """Which jobs this instance works on (:class:`Leases`, or :class:`SoleInstance`)."""

    @property
    def held(self) -> list[str]: ...

    @property
    def members(self) -> set[str]: ...

    def holds(self, key: str) -> bool: ...

    async def claim(self, key: str, *, force: bool = False) -> bool: ...

    async def release(self, key: str) -> None: ...

    async def release_all(self) -> None: ...

    async def keep(self, active: Iterable[str]) -> list[str]: ...


def pass_on_to_holder(holding: Holding, key: str, deliveries: int) -> bool:
    """Whether a message about ``key`` (a job) should go back to the queue the instances
    share, for the one that holds ``key``: its first delivery (``deliveries`` before it:
    0) reached an instance that does not hold ``key`` while others run.

    The queue's next delivery goes, most often, to another instance. A message is handed
    back at most once, so one whose job nobody holds now is still handled, by whichever
    instance its second delivery reaches.
    """
    return deliveries == 0 and not holding.holds(key) and len(holding.members) > 1


class SoleInstance:
    """The only instance there is (the simulation, whose services have no database of
    their own): it works on every job and stores nothing."""

    def __init__(self) -> None:
        self._held: set[str] = set()

    @property
    def held(self) -> list[str]:
        """Every job claimed and not released."""
        return list(self._held)

    @property
    def members(self) -> set[str]:
        """None known but this one."""
        return set()

    def holds(self, key: str) -> bool:
        """Always: every job is this instance's."""
        return True

    async def claim(self, key: str, *, force: bool = False) -> bool:
        """Always granted."""
        self._held.add(key)
        return True

    async def release(self, key: str) -> None:
        """Forget ``key``."""
        self._held.discard(key)

    async def release_all(self) -> None:
        """Forget every job."""
        self._held.clear()

    async def keep(self, active: Iterable[str]) -> list[str]:
        """Every active job not held yet (as if just taken)."""
        taken = [key for key in active if key not in self._held]
        self._held.update(taken)
        return taken


def leases_for(db: Any, settings: LeaseSettings) -> Holding:
    """The leases of a service instance: in ``db``'s ``leases`` collection, or, when the
    service has no database of its own (``None``: the simulation), the sole instance."""
    if db is None:
        return SoleInstance()
    return Leases(MongoLeaseStore(db["leases"]), settings.instance_name, settings.lease_ttl_s)


class Leases:
    """This instance's leases on jobs, kept in ``store`` (the service's own database).

    Parameters
    ----------
    store
        Where the leases of all the service's instances are
        (:class:`~.mongo.MongoLeaseStore`).
    holder
        This instance's name (:func:`~.settings.new_instance_name`).
    ttl_s
        How long a lease lasts unrenewed; renew (:meth:`keep`) well within it.
    clock
        What ``now`` is (the system's clocks by default).
    """

    def __init__(
        self, store: LeaseStore, holder: str, ttl_s: float, *, clock: Clock | None = None
    ) -> None:
        self.store = store
        self.holder = holder
        self.ttl_s = ttl_s
        self.clock = clock or Clock()
        self.book = LeaseBook(holder, ttl_s)

    @property
    def held(self) -> list[str]:
        """The jobs whose leases this instance holds now."""
        return self.book.held(self.clock.monotonic())

    @property
    def members(self) -> set[str]:
        """The live instances, as last seen (this one included)."""
        return self.book.members

    def holds(self, key: str) -> bool:
        """Whether this instance may work on ``key`` now."""
        return self.book.holds(key, self.clock.monotonic())

    async def claim(self, key: str, *, force: bool = False) -> bool:
        """Hold ``key``'s lease: ``True`` if this instance holds it now.

        Without ``force`` only the job's preferred instance tries (others leave it,
        unless it stays unclaimed: see :meth:`keep`); with it, any free or expired
        lease is taken.
        """
        if self.holds(key):
            return True
        since, now = self.clock.monotonic(), self.clock.now()
        if not self.book.tries(key, since, force=force):
            return False
        previous = await self._take(key, now)
        if previous is False:  # held by another instance, or another took it first
            self.book.refuse(key, since)
            return False
        self.book.hold(key, since)
        log.info("lease taken", job_id=key, holder=self.holder, previous=previous)
        return True

    async def _take(self, key: str, now: datetime) -> str | Literal[False] | None:
        """Write this instance's lease on ``key`` if it is free, expired or already this
        instance's; the previous holder (``None``: none), or ``False`` if refused."""
        until = self.book.until(now)
        lease = await self.store.get(key)
        match self.book.standing(lease, now):
            case "free":
                created = await self.store.create(Lease(key, self.holder, until, _token()))
                return None if created else False
            case "theirs":
                return False
            case "ours":
                await self.store.renew([key], self.holder, until)
                return self.holder
        assert lease is not None  # expired: a takeover or a sweep may be racing
        if not await self.store.supersede(lease.claim_id, now):
            return False
        taken = await self.store.replace(lease, Lease(key, self.holder, until, _token()))
        return lease.holder if taken else False

    async def release(self, key: str) -> None:
        """Give ``key`` up (its job ended, or this instance stops)."""
        if self.book.drop(key):
            await self.store.release([key], self.holder)

    async def release_all(self) -> None:
        """Give every lease and the membership up (a clean shutdown: others take over now)."""
        keys = self.book.drop_all()
        await self.store.release([*keys, MEMBER + self.holder], self.holder)

    async def keep(self, active: Iterable[str]) -> list[str]:
        """Renew membership and leases, then take the ``active`` jobs that are free and
        this instance's to take; the jobs newly taken (the caller catches them up).

        Call it often (every tick): it touches the store every ``ttl_s / 4``, or at once
        when an active job is neither this instance's nor known to be another's.
        """
        since, now = self.clock.monotonic(), self.clock.now()
        active = list(active)
        if not self.book.renewing(active, since, now):
            return []
        until = self.book.until(now)
        await self.store.join(MEMBER + self.holder, self.holder, until)
        if kept := self.book.kept:
            await self.store.renew(kept, self.holder, until)
        docs = await self.store.read_all()
        reading = self.book.observe(docs, since, now)
        for key in reading.lost:
            log.warning("lease lost", job_id=key, holder=self.holder)
        for key, heir in reading.handovers:
            await self.release(key)
            log.info("lease handed over", job_id=key, holder=self.holder, heir=heir)
        taken = []
        for key in active:
            if self.book.takes(key, reading, since, now) and await self.claim(key, force=True):
                taken.append(key)
        await self._sweep(docs, now)
        return taken

    async def _sweep(self, docs: list[Lease], now: datetime) -> None:
        """Delete memberships stale for ten TTLs and leases expired for one (their
        holders died: :meth:`~.book.LeaseBook.sweep`)."""
        sweep = self.book.sweep(docs, now)
        if sweep.members:
            await self.store.expire(sweep.members, sweep.stale)
        for lease in sweep.leases:  # a takeover of the same lease may be racing: claim it first
            if await self.store.supersede(lease.claim_id, now):
                await self.store.remove(lease)
        if sweep.leases:  # claims are needed only while a read of their lease may be acted on
            await self.store.forget_claims(sweep.stale)
