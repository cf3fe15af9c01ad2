"""The registry's own ports in memory (the broker accounts, the directory's durable
copy), and a registry application built on in-memory ports with a manual clock."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from peertrain.common.app import Ports
from peertrain.common.clock import ManualClock
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.security import Security
from peertrain.registry.application import RegistryApp
from peertrain.registry.config import RegistrySettings
from peertrain.registry.domain.peer import PeerRecord

__all__ = ["MemoryAccounts", "MemoryReadModel", "Registry", "registry"]


@dataclass
class MemoryAccounts:
    """Peers' broker accounts: who has one."""

    accounts: set[str] = field(default_factory=set)
    deprovisioned: list[str] = field(default_factory=list)

    async def provision(self, peer_id: str) -> None:
        self.accounts.add(peer_id)

    async def new_password(self, peer_id: str) -> str:
        return f"password-of-{peer_id}"

    async def deprovision(self, peer_id: str) -> None:
        self.accounts.discard(peer_id)
        self.deprovisioned.append(peer_id)


@dataclass
class MemoryReadModel:
    """The directory's durable copy."""

    records: dict[str, PeerRecord] = field(default_factory=dict)
    checkpoint: int = 0

    async def load(self) -> tuple[list[PeerRecord], int]:
        return list(self.records.values()), self.checkpoint

    async def save(self, records: Iterable[PeerRecord], *, checkpoint: int | None) -> int:
        saved = 0
        for record in records:
            self.records[record.peer_id] = record
            saved += 1
        if checkpoint is not None:
            self.checkpoint = checkpoint
        return saved

    async def insert_all(self, records: list[PeerRecord], *, checkpoint: int) -> None:
        await self.save(records, checkpoint=checkpoint)

    async def drop(self) -> None:
        self.records.clear()
        self.checkpoint = 0


@dataclass
class Registry:
    """A :class:`RegistryApp` and what it was built on."""

    app: RegistryApp
    log: MemoryEventLog
    clock: ManualClock
    accounts: MemoryAccounts
    store: MemoryReadModel


def registry(security: Security, **settings: Any) -> Registry:
    """The registry on in-memory ports; time moves only when the test moves it."""
    log = MemoryEventLog()
    clock = ManualClock(datetime.now(UTC))  # tokens are signed at the real time
    accounts = MemoryAccounts()
    store = MemoryReadModel()
    app = RegistryApp(
        Ports(log=log, clock=clock),
        RegistrySettings(**settings),
        security,
        store=store,
        accounts=accounts,
    )
    return Registry(app, log, clock, accounts, store)
