"""The book of one instance's leases: pure, no store and no clock of its own.

Every call takes the times it judges by: ``since``, a reading of this instance's
monotonic clock (what it counts on), and ``now``, wall-clock UTC (what the lease
documents say, read by every instance). The shell (:class:`~.holding.Leases`) reads
the clock, asks the book, and carries the answer out on the store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

__all__ = ["MEMBER", "Lease", "LeaseBook", "Reading", "Standing", "Sweep", "preferred"]

MEMBER = "member:"
"""Membership documents' id prefix (job ids never start with it)."""


def preferred(key: str, members: Iterable[str]) -> str | None:
    """The member that should hold ``key``: highest rendezvous hash (``None``: no members)."""
    return max(
        members, key=lambda m: hashlib.sha256(f"{m}\x00{key}".encode()).digest(), default=None
    )


@dataclass(frozen=True, slots=True)
class Lease:
    """One document of the store: a job's lease, or an instance's membership
    (``key`` is ``member:<instance>``; it has no token).

    Parameters
    ----------
    key
        The job id (the document's ``_id``).
    holder
        The instance holding it.
    until
        When it expires unless renewed, by the holder's wall clock (UTC).
    token
        Fresh on every take: a takeover or a sweep acts only on the lease it read.
    """

    key: str
    holder: str
    until: datetime
    token: str | None = None

    @property
    def membership(self) -> bool:
        """Whether this is an instance's membership, not a job's lease."""
        return self.key.startswith(MEMBER)

    @property
    def claim_id(self) -> str:
        """The one claim that lets an instance replace or delete this lease as read."""
        token = self.token or f"{self.holder}@{self.until.isoformat()}"
        return f"{self.key}@{token}"


Standing = Literal["free", "ours", "theirs", "expired"]
"""A job's lease as read, for this instance: none, its own, another's live one, or one
expired (anyone's)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """What one read of the whole store (:meth:`LeaseBook.observe`) means here.

    Parameters
    ----------
    leases
        Job id -> its lease (memberships left out).
    lost
        Jobs this instance counted on that another holds now (dropped from the book).
    handovers
        Job -> heir: this instance's jobs whose preferred member joined a lease's time
        ago (still held: the shell releases them).
    """

    leases: Mapping[str, Lease]
    lost: list[str]
    handovers: list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Sweep:
    """What a renewal deletes (:meth:`LeaseBook.sweep`).

    Parameters
    ----------
    stale
        Memberships that expired before it are gone, and so are claims made before it.
    members
        The ids of those memberships.
    leases
        Leases expired for a whole TTL (their holders died).
    """

    stale: datetime
    members: list[str]
    leases: list[Lease]


class LeaseBook:
    """Which jobs this instance holds, until when it counts on them, and what it takes,
    renews, hands over and sweeps.

    Parameters
    ----------
    holder
        This instance's name.
    ttl_s
        How long a lease lasts unrenewed. The holder counts on it for ``0.8 * ttl_s``
        after each renewal; it renews every ``ttl_s / 4``.
    """

    def __init__(self, holder: str, ttl_s: float) -> None:
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

    # -- what this instance holds -------------------------------------------------------

    def held(self, since: float) -> list[str]:
        """The jobs this instance may work on at ``since``."""
        return [key for key in self._held if self.holds(key, since)]

    @property
    def kept(self) -> list[str]:
        """The jobs whose leases this instance renews (counted on or not)."""
        return list(self._held)

    @property
    def members(self) -> set[str]:
        """The live instances, as last seen (this one included)."""
        return set(self._members)

    def holds(self, key: str, since: float) -> bool:
        """Whether this instance may work on ``key`` at ``since``."""
        until = self._held.get(key)
        return until is not None and since < until

    def until(self, now: datetime) -> datetime:
        """The expiry of a lease taken or renewed at ``now``."""
        return now + timedelta(seconds=self.ttl_s)

    # -- claims -------------------------------------------------------------------------

    def tries(self, key: str, since: float, *, force: bool) -> bool:
        """Whether a claim of ``key`` goes to the store: with ``force`` always, else only
        on its preferred instance and not while another is known to hold it."""
        if not force and since < self._refused.get(key, 0.0):
            return False  # held elsewhere: no store write per event (keep() takes over)
        if not force and preferred(key, self._members) != self.holder:
            self._unclaimed.setdefault(key, since)
            return False
        return True

    def standing(self, lease: Lease | None, now: datetime) -> Standing:
        """What taking ``lease`` (as read; ``None``: no document) means at ``now``."""
        if lease is None:
            return "free"
        if lease.until >= now:
            return "ours" if lease.holder == self.holder else "theirs"
        return "expired"

    def hold(self, key: str, since: float) -> None:
        """The store gave ``key``'s lease to this instance (taken or renewed) at ``since``."""
        self._held[key] = since + self.ttl_s * 0.8
        self._unclaimed.pop(key, None)
        self._refused.pop(key, None)

    def refuse(self, key: str, since: float) -> None:
        """Another instance holds ``key`` (or took it first): ask the store again only
        after half a TTL."""
        self._unclaimed.pop(key, None)
        self._refused[key] = since + self.ttl_s / 2

    def drop(self, key: str) -> bool:
        """Forget ``key``; whether this instance had its lease (the shell deletes it)."""
        self._unclaimed.pop(key, None)
        self._refused.pop(key, None)
        return self._held.pop(key, None) is not None

    def drop_all(self) -> list[str]:
        """Forget every lease held; their keys."""
        keys = list(self._held)
        self._held.clear()
        return keys

    # -- renewal ------------------------------------------------------------------------

    def renewing(self, active: list[str], since: float, now: datetime) -> bool:
        """Whether to renew now (then the next renewal is due in ``ttl_s / 4``): it is due,
        or an ``active`` job is neither this instance's nor known to be another's."""
        settled = all(key in self._held or self._others.get(key, now) > now for key in active)
        if settled and since < self._due:
            return False
        self._due = since + self.ttl_s / 4
        return True

    def observe(self, docs: Iterable[Lease], since: float, now: datetime) -> Reading:
        """Take in the whole store as read after renewing at ``since`` / ``now``: the
        live members, others' leases, this instance's leases lost and to hand over."""
        docs = list(docs)
        self._members = {self.holder} | {d.holder for d in docs if d.membership and d.until > now}
        self._member_since = {m: self._member_since.get(m, since) for m in self._members}
        leases = {d.key: d for d in docs if not d.membership}
        self._others = {k: d.until for k, d in leases.items() if d.holder != self.holder}
        lost: list[str] = []
        handovers: list[tuple[str, str]] = []
        for key in list(self._held):
            lease = leases.get(key)
            if lease is None or lease.holder != self.holder:
                del self._held[key]
                lost.append(key)
                continue
            self.hold(key, since)
            heir = preferred(key, self._members) or ""
            if heir != self.holder and since - self._member_since[heir] > self.ttl_s:
                handovers.append((key, heir))  # a member that joined takes its share
        return Reading(leases, lost, handovers)

    def takes(self, key: str, reading: Reading, since: float, now: datetime) -> bool:
        """Whether this instance takes the active job ``key`` (a forced claim): it has no
        live lease, and this instance is its preferred one, or nobody took it for a TTL."""
        lease = reading.leases.get(key)
        if key in self._held or (lease is not None and lease.until > now):
            self._unclaimed.pop(key, None)
            return False
        first_seen = self._unclaimed.setdefault(key, since)
        ours = preferred(key, self._members) == self.holder
        return ours or since - first_seen > self.ttl_s

    def sweep(self, docs: Iterable[Lease], now: datetime) -> Sweep:
        """Memberships stale for ten TTLs and leases expired for one: a lease nobody
        renewed for a whole TTL belongs to a dead instance (an active job's is claimed
        again anyway, and an ended job's would otherwise stay for good)."""
        stale = now - timedelta(seconds=self.ttl_s * 10)
        expired = now - timedelta(seconds=self.ttl_s)
        docs = list(docs)
        members = [d.key for d in docs if d.membership and d.until < stale]
        leases = [d for d in docs if not d.membership and d.until < expired]
        return Sweep(stale, members, leases)
