"""Leases: which instance of a service works on which job.

More than one orchestrator (or aggregator) may run. Every instance hears every event
and keeps its read of every job current, but only one works on a job: the holder of
the job's lease, a document ``{_id: <job id>, holder, until}`` in the service's own
database. The holder renews its leases every tick; a lease not renewed for
``ttl_s`` (its instance died, or lost the store) is taken over by another instance.

Who takes a job: each instance also renews a membership document
(``member:<instance>``), and a job's preferred instance is the rendezvous-hash winner
among the live members (:func:`preferred`). So jobs spread evenly, and only the jobs
of an instance that comes or goes move: a stopped instance's once its leases expire,
and a new instance's share once it has been live for ``ttl_s`` (their holders hand
them over). A lease nobody took within ``ttl_s`` (its preferred instance never heard
of the job) goes to whoever sees it first. A lease left expired for a whole ``ttl_s``
(its holder died, and the job may have ended meanwhile) is deleted by the next
instance that renews.

Taking a lease is atomic on FerretDB, which runs a conditional update as a query then
a write (two instances could both find a lease expired, and both take it): a free
job's lease is taken by inserting its document (unique ``_id``), and an expired one by
first inserting a claim on that very lease (``<job>@<its token>`` in
``<collection>_claims``; each lease document carries a fresh ``token``). Only the
instance that inserted the claim writes the lease; a sweep deletes an expired lease
the same way, so a takeover and a sweep never both act on one lease.

A lease is a promise, not a fence. An instance that stalls past its lease (a long
pause, a partition) may still try one append after another has taken over: the job
stream's optimistic concurrency refuses it (the expected version has moved), so two
holders can waste work but never fork a job. ``until`` is written by the holder's clock
and read by the others', so the instances' clocks must agree to well within ``ttl_s``
(NTP does); the holder itself stops counting on a lease ``ttl_s / 5`` early, by its
monotonic clock.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

import structlog
from pydantic import Field
from pydantic_settings import BaseSettings
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

__all__ = [
    "MEMBER",
    "Holding",
    "LeaseSettings",
    "Leases",
    "SoleInstance",
    "leases_for",
    "new_instance_name",
    "preferred",
]

log = structlog.get_logger(__name__)

MEMBER = "member:"
"""Membership documents' id prefix (job ids never start with it)."""


def new_instance_name() -> str:
    """A name for this process, unique among a service's instances (host, pid, random)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class LeaseSettings(BaseSettings):
    """Settings of a service that may run as several instances (mixed into its own)."""

    instance_name: str = Field(default_factory=new_instance_name)
    """This instance among the service's (its leases' holder; its own queue's name)."""
    lease_ttl_s: float = Field(default=10.0, ge=1.0, le=600.0)
    """A job whose instance stopped renewing moves to another after this long."""
    feed_expires_s: int = Field(default=300, ge=10, le=86_400)
    """An instance's own queue is deleted after this long without it (it is gone)."""


def _token() -> str:
    return uuid.uuid4().hex


def preferred(key: str, members: Iterable[str]) -> str | None:
    """The member that should hold ``key``: highest rendezvous hash (``None``: no members)."""
    return max(
        members, key=lambda m: hashlib.sha256(f"{m}\x00{key}".encode()).digest(), default=None
    )


class Holding(Protocol):
    """Which jobs this instance works on (:class:`Leases`, or :class:`SoleInstance`)."""

    @property
    def held(self) -> list[str]: ...

    def holds(self, key: str) -> bool: ...

    async def claim(self, key: str, *, force: bool = False) -> bool: ...

    async def release(self, key: str) -> None: ...

    async def release_all(self) -> None: ...

    async def keep(self, active: Iterable[str]) -> list[str]: ...


class SoleInstance:
    """The only instance there is (the simulation, whose services have no database of
    their own): it works on every job and stores nothing."""

    def __init__(self) -> None:
        self._held: set[str] = set()

    @property
    def held(self) -> list[str]:
        """Every job claimed and not released."""
        return list(self._held)

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
    return Leases(db["leases"], settings.instance_name, settings.lease_ttl_s)


class Leases:
    """This instance's leases on jobs, kept in ``collection`` (the service's own database).

    Parameters
    ----------
    collection
        ``leases`` in the service's database (a tz-aware client).
    holder
        This instance's name (:func:`new_instance_name`).
    ttl_s
        How long a lease lasts unrenewed; renew (:meth:`keep`) well within it.
    """

    def __init__(self, collection: AsyncCollection[Any], holder: str, ttl_s: float) -> None:
        self.collection = collection
        self.claims: AsyncCollection[Any] = collection.database[f"{collection.name}_claims"]
        """One document per lease superseded (taken over or swept): ``_id`` is unique."""
        self.holder = holder
        self.ttl_s = ttl_s
        self._held: dict[str, float] = {}
        """Job id -> monotonic time until which this instance counts on its lease."""
        self._members: set[str] = {holder}
        self._unclaimed: dict[str, float] = {}
        """Job id -> monotonic time it was first seen with no live lease."""
        self._refused: dict[str, float] = {}
        """Job id -> monotonic time until which another instance is known to hold it."""
        self._member_since: dict[str, float] = {}
        """Live member -> monotonic time it was first seen live."""
        self._others: dict[str, datetime] = {}
        """Job id -> expiry of another instance's lease on it, as last read."""
        self._due = 0.0
        """Monotonic time of the next renewal (every ``ttl_s / 4``)."""

    @property
    def held(self) -> list[str]:
        """The jobs whose leases this instance holds now."""
        return [key for key in self._held if self.holds(key)]

    @property
    def members(self) -> set[str]:
        """The live instances, as last seen (this one included)."""
        return set(self._members)

    def holds(self, key: str) -> bool:
        """Whether this instance may work on ``key`` now."""
        until = self._held.get(key)
        return until is not None and time.monotonic() < until

    def _hold(self, key: str, since: float) -> None:
        self._held[key] = since + self.ttl_s * 0.8
        self._unclaimed.pop(key, None)
        self._refused.pop(key, None)

    async def claim(self, key: str, *, force: bool = False) -> bool:
        """Hold ``key``'s lease: ``True`` if this instance holds it now.

        Without ``force`` only the job's preferred instance tries (others leave it,
        unless it stays unclaimed: see :meth:`keep`); with it, any free or expired
        lease is taken.
        """
        if self.holds(key):
            return True
        since, now = time.monotonic(), datetime.now(UTC)
        if not force and since < self._refused.get(key, 0.0):
            return False  # held elsewhere: no store write per event (keep() takes over)
        if not force and preferred(key, self._members) != self.holder:
            self._unclaimed.setdefault(key, since)
            return False
        previous = await self._take(key, now)
        if previous is False:  # held by another instance, or another took it first
            self._unclaimed.pop(key, None)
            self._refused[key] = since + self.ttl_s / 2
            return False
        self._hold(key, since)
        log.info("lease taken", job_id=key, holder=self.holder, previous=previous)
        return True

    async def _take(self, key: str, now: datetime) -> str | Literal[False] | None:
        """Write this instance's lease on ``key`` if it is free, expired or already this
        instance's; the previous holder (``None``: none), or ``False`` if refused."""
        until = now + timedelta(seconds=self.ttl_s)
        doc = await self.collection.find_one({"_id": key})
        if doc is None:
            lease = {"_id": key, "holder": self.holder, "until": until, "token": _token()}
            try:
                await self.collection.insert_one(lease)
            except DuplicateKeyError:  # another instance created it first
                return False
            return None
        holder = doc.get("holder")
        if doc["until"] >= now:
            if holder != self.holder:
                return False
            await self.collection.update_one(
                {"_id": key, "holder": self.holder}, {"$set": {"until": until}}
            )
            return str(holder)
        if not await self._supersede(key, doc, now):
            return False
        taken = await self.collection.update_one(
            {"_id": key, "token": doc.get("token")},
            {"$set": {"holder": self.holder, "until": until, "token": _token()}},
        )
        return str(holder) if taken.modified_count == 1 else False

    async def _supersede(self, key: str, doc: dict[str, Any], now: datetime) -> bool:
        """Claim the right to replace or delete the lease ``doc`` (as read): ``True``
        for the one instance whose claim went in."""
        token = doc.get("token") or f"{doc.get('holder')}@{doc['until'].isoformat()}"
        try:
            await self.claims.insert_one({"_id": f"{key}@{token}", "at": now})
        except DuplicateKeyError:
            return False
        return True

    async def release(self, key: str) -> None:
        """Give ``key`` up (its job ended, or this instance stops)."""
        self._unclaimed.pop(key, None)
        self._refused.pop(key, None)
        if self._held.pop(key, None) is not None:
            await self.collection.delete_one({"_id": key, "holder": self.holder})

    async def release_all(self) -> None:
        """Give every lease and the membership up (a clean shutdown: others take over now)."""
        keys = list(self._held)
        self._held.clear()
        await self.collection.delete_many(
            {"_id": {"$in": [*keys, MEMBER + self.holder]}, "holder": self.holder}
        )

    async def keep(self, active: Iterable[str]) -> list[str]:
        """Renew membership and leases, then take the ``active`` jobs that are free and
        this instance's to take; the jobs newly taken (the caller catches them up).

        Call it often (every tick): it touches the store every ``ttl_s / 4``, or at once
        when an active job is neither this instance's nor known to be another's.
        """
        since, now = time.monotonic(), datetime.now(UTC)
        active = list(active)
        settled = all(key in self._held or self._others.get(key, now) > now for key in active)
        if settled and since < self._due:
            return []
        self._due = since + self.ttl_s / 4
        until = now + timedelta(seconds=self.ttl_s)
        await self.collection.update_one(
            {"_id": MEMBER + self.holder},
            {"$set": {"holder": self.holder, "until": until}},
            upsert=True,
        )
        if self._held:
            await self.collection.update_many(
                {"_id": {"$in": list(self._held)}, "holder": self.holder},
                {"$set": {"until": until}},
            )
        docs = await self.collection.find({}).to_list()
        self._members = {self.holder} | {
            d["holder"] for d in docs if d["_id"].startswith(MEMBER) and d["until"] > now
        }
        self._member_since = {m: self._member_since.get(m, since) for m in self._members}
        leases = {d["_id"]: d for d in docs if not d["_id"].startswith(MEMBER)}
        self._others = {k: d["until"] for k, d in leases.items() if d["holder"] != self.holder}
        for key in list(self._held):
            if leases.get(key, {}).get("holder") != self.holder:
                del self._held[key]
                log.warning("lease lost", job_id=key, holder=self.holder)
                continue
            self._hold(key, since)
            heir = preferred(key, self._members)
            if heir != self.holder and since - self._member_since[heir or ""] > self.ttl_s:
                await self.release(key)  # a member that joined takes its share
                log.info("lease handed over", job_id=key, holder=self.holder, heir=heir)
        taken = []
        for key in active:
            doc = leases.get(key)
            if key in self._held or (doc is not None and doc["until"] > now):
                self._unclaimed.pop(key, None)
                continue
            first_seen = self._unclaimed.setdefault(key, since)
            ours = preferred(key, self._members) == self.holder
            if not ours and since - first_seen <= self.ttl_s:
                continue
            if await self.claim(key, force=True):
                taken.append(key)
        await self._sweep(docs, now)
        return taken

    async def _sweep(self, docs: list[dict[str, Any]], now: datetime) -> None:
        """Delete memberships stale for ten TTLs and leases expired for one: a lease
        nobody renewed for a whole TTL belongs to a dead instance (an active job's is
        claimed again anyway, and an ended job's would otherwise stay for good)."""
        stale = now - timedelta(seconds=self.ttl_s * 10)
        expired = now - timedelta(seconds=self.ttl_s)
        members = [d["_id"] for d in docs if d["_id"].startswith(MEMBER) and d["until"] < stale]
        leases = [d for d in docs if not d["_id"].startswith(MEMBER) and d["until"] < expired]
        if members:
            await self.collection.delete_many({"_id": {"$in": members}, "until": {"$lt": stale}})
        for lease in leases:  # a takeover of the same lease may be racing: claim it first
            if await self._supersede(lease["_id"], lease, now):
                await self.collection.delete_one({"_id": lease["_id"], "token": lease.get("token")})
        if leases:  # claims are needed only while a read of their lease may be acted on
            await self.claims.delete_many({"at": {"$lt": stale}})
