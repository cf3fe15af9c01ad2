"""Where leases are kept: the port (:class:`~.mongo.MongoLeaseStore` in a service's
database, :class:`~.memory.MemoryLeaseStore` for unit tests).

Every write that decides who holds a lease succeeds for one caller only, even on a
store that runs a conditional update as a query then a write (FerretDB): a free lease
is created by a unique insert (:meth:`LeaseStore.create`), and an expired one is
replaced or deleted only by the one caller whose claim on it went in
(:meth:`LeaseStore.supersede`, another unique insert).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from .book import Lease

__all__ = ["LeaseStore"]


class LeaseStore(Protocol):
    """The leases and memberships of one service's instances, and the claims on them."""

    async def get(self, key: str) -> Lease | None:
        """``key``'s document (``None``: there is none)."""
        ...

    async def read_all(self) -> list[Lease]:
        """Every lease and membership."""
        ...

    async def create(self, lease: Lease) -> bool:
        """Insert ``lease``: ``False`` if its key has a document already."""
        ...

    async def replace(self, old: Lease, new: Lease) -> bool:
        """Write ``new`` over ``old`` if its document still has ``old``'s token."""
        ...

    async def renew(self, keys: list[str], holder: str, until: datetime) -> None:
        """Set ``until`` on those of ``keys`` that ``holder`` holds."""
        ...

    async def join(self, member: str, holder: str, until: datetime) -> None:
        """Create or renew the membership ``member`` of ``holder``."""
        ...

    async def release(self, keys: list[str], holder: str) -> None:
        """Delete those of ``keys`` that ``holder`` holds."""
        ...

    async def expire(self, keys: list[str], before: datetime) -> None:
        """Delete those of ``keys`` that expired before ``before``."""
        ...

    async def remove(self, lease: Lease) -> None:
        """Delete ``lease`` if its document still has its token."""
        ...

    async def supersede(self, claim_id: str, at: datetime) -> bool:
        """Record the claim ``claim_id`` (:attr:`Lease.claim_id`): ``True`` for the one
        caller whose claim went in."""
        ...

    async def forget_claims(self, before: datetime) -> None:
        """Delete the claims made before ``before``."""
        ...
