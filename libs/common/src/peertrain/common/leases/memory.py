"""Leases in memory: the store for unit tests (several instances may share one)."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import datetime

from .book import Lease

__all__ = ["MemoryLeaseStore"]


class MemoryLeaseStore:
    """The :class:`~.store.LeaseStore` in two dicts. Every call yields to the event loop
    once, like a round trip to a server (instances sharing the store interleave), then
    acts. Inserts are atomic (unique ids); a token-guarded write is, as on FerretDB, a
    read then a write with a turn of the event loop between (two callers can both find
    the token they expect: only the claims keep a takeover or a sweep from acting twice)."""

    def __init__(self) -> None:
        self.leases: dict[str, Lease] = {}
        """Key -> its lease or membership."""
        self.claims: dict[str, datetime] = {}
        """Claim id -> when it was made."""

    async def get(self, key: str) -> Lease | None:
        await asyncio.sleep(0)
        return self.leases.get(key)

    async def read_all(self) -> list[Lease]:
        await asyncio.sleep(0)
        return list(self.leases.values())

    async def create(self, lease: Lease) -> bool:
        await asyncio.sleep(0)
        if lease.key in self.leases:
            return False
        self.leases[lease.key] = lease
        return True

    async def replace(self, old: Lease, new: Lease) -> bool:
        await asyncio.sleep(0)
        current = self.leases.get(old.key)
        if current is None or current.token != old.token:
            return False
        await asyncio.sleep(0)  # the write, by id
        if old.key not in self.leases:
            return False
        self.leases[old.key] = new
        return True

    async def renew(self, keys: list[str], holder: str, until: datetime) -> None:
        await asyncio.sleep(0)
        for key in keys:
            lease = self.leases.get(key)
            if lease is not None and lease.holder == holder:
                self.leases[key] = dataclasses.replace(lease, until=until)

    async def join(self, member: str, holder: str, until: datetime) -> None:
        await asyncio.sleep(0)
        lease = self.leases.get(member) or Lease(member, holder, until)
        self.leases[member] = dataclasses.replace(lease, holder=holder, until=until)

    async def release(self, keys: list[str], holder: str) -> None:
        await asyncio.sleep(0)
        for key in keys:
            lease = self.leases.get(key)
            if lease is not None and lease.holder == holder:
                del self.leases[key]

    async def expire(self, keys: list[str], before: datetime) -> None:
        await asyncio.sleep(0)
        for key in keys:
            lease = self.leases.get(key)
            if lease is not None and lease.until < before:
                del self.leases[key]

    async def remove(self, lease: Lease) -> None:
        await asyncio.sleep(0)
        current = self.leases.get(lease.key)
        if current is not None and current.token == lease.token:
            await asyncio.sleep(0)  # the write, by id
            self.leases.pop(lease.key, None)

    async def supersede(self, claim_id: str, at: datetime) -> bool:
        await asyncio.sleep(0)
        if claim_id in self.claims:
            return False
        self.claims[claim_id] = at
        return True

    async def forget_claims(self, before: datetime) -> None:
        await asyncio.sleep(0)
        self.claims = {c: at for c, at in self.claims.items() if at >= before}
