"""Leases in memory: the store for unit tests (several instances may share one)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from .book import Lease

__all__ = ["MemoryLeaseStore"]


class MemoryLeaseStore:
    """The :class:`~.store.LeaseStore` in two dicts. No method awaits inside, so each
    is atomic as the store's unique inserts and token-guarded writes are."""

    def __init__(self) -> None:
        self.leases: dict[str, Lease] = {}
        """Key -> its lease or membership."""
        self.claims: dict[str, datetime] = {}
        """Claim id -> when it was made."""

    async def get(self, key: str) -> Lease | None:
        return self.leases.get(key)

    async def read_all(self) -> list[Lease]:
        return list(self.leases.values())

    async def create(self, lease: Lease) -> bool:
        if lease.key in self.leases:
            return False
        self.leases[lease.key] = lease
        return True

    async def replace(self, old: Lease, new: Lease) -> bool:
        current = self.leases.get(old.key)
        if current is None or current.token != old.token:
            return False
        self.leases[old.key] = replace(new, key=old.key)
        return True

    async def renew(self, keys: list[str], holder: str, until: datetime) -> None:
        for key in keys:
            lease = self.leases.get(key)
            if lease is not None and lease.holder == holder:
                self.leases[key] = replace(lease, until=until)

    async def join(self, member: str, holder: str, until: datetime) -> None:
        lease = self.leases.get(member) or Lease(member, holder, until)
        self.leases[member] = replace(lease, holder=holder, until=until)

    async def release(self, keys: list[str], holder: str) -> None:
        for key in keys:
            lease = self.leases.get(key)
            if lease is not None and lease.holder == holder:
                del self.leases[key]

    async def expire(self, keys: list[str], before: datetime) -> None:
        for key in keys:
            lease = self.leases.get(key)
            if lease is not None and lease.until < before:
                del self.leases[key]

    async def remove(self, lease: Lease) -> None:
        current = self.leases.get(lease.key)
        if current is not None and current.token == lease.token:
            del self.leases[lease.key]

    async def supersede(self, claim_id: str, at: datetime) -> bool:
        if claim_id in self.claims:
            return False
        self.claims[claim_id] = at
        return True

    async def forget_claims(self, before: datetime) -> None:
        self.claims = {c: at for c, at in self.claims.items() if at >= before}
