"""Signing keys: public part and state in the database, private PEMs in a directory.

States: ``next`` (published, not yet signing: a rotation in progress), ``active`` (the
one key that signs), ``retiring`` (published until ``retires_at``), ``retired``
(unpublished; its PEM is deleted). Private keys never leave the key directory: not
into the database, not into events.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from jose import jwk
from pymongo import ASCENDING
from pymongo.asynchronous.database import AsyncDatabase

from peertrain.auth.domain.keys import NewKey
from peertrain.common.clock import SYSTEM_CLOCK, Clock
from peertrain.common.events.auth import PublicJwk
from peertrain.common.security import ALGORITHMS

__all__ = ["PUBLISHED_STATES", "KeyRecord", "KeyStore", "MissingPrivateKey"]

Doc = dict[str, Any]

PUBLISHED_STATES = ("next", "active", "retiring")


class MissingPrivateKey(RuntimeError):
    """The key directory lacks the private key the database names as active."""


@dataclass(frozen=True)
class KeyRecord:
    """A signing key as stored (public part and state)."""

    kid: str
    jwk: PublicJwk
    state: str
    created_at: datetime
    retires_at: datetime | None = None

    @classmethod
    def from_doc(cls, doc: Doc) -> KeyRecord:
        """Build from a stored document."""
        return cls(
            kid=doc["_id"],
            jwk=PublicJwk.model_validate(doc["jwk"]),
            state=doc["state"],
            created_at=doc["created_at"],
            retires_at=doc.get("retires_at"),
        )


class KeyStore:
    """The ``signing_keys`` collection and the private key directory.

    Parameters
    ----------
    db
        The auth service's database.
    key_dir
        Where ``<kid>.pem`` files live (created with mode 0700, files 0600).
    cache_s
        How long the active key is used before the database is asked again.
    clock
        Times that cache (monotonic).
    """

    def __init__(
        self, db: AsyncDatabase[Doc], key_dir: Path, *, cache_s: float, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.col = db["signing_keys"]
        self.key_dir = Path(key_dir)
        self.cache_s = cache_s
        self.clock = clock
        self._signer: tuple[str, Any] | None = None
        self._signer_until = 0.0
        self._parsed: dict[str, Any] = {}

    # -- private keys (small synchronous file operations) -------------------------------

    def _path(self, kid: str) -> Path:
        return self.key_dir / f"{kid}.pem"

    def write_private(self, key: NewKey) -> None:
        """Write ``<kid>.pem`` readable by this user only."""
        self.key_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self._path(key.kid), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(key.private_pem)

    def has_private(self, kid: str) -> bool:
        """Whether the key directory holds ``kid``."""
        return self._path(kid).is_file()

    def delete_private(self, kid: str) -> None:
        """Remove a retired key's private PEM."""
        self._parsed.pop(kid, None)
        self._path(kid).unlink(missing_ok=True)

    def _private(self, kid: str) -> Any:
        if kid not in self._parsed:
            try:
                pem = self._path(kid).read_bytes()
            except FileNotFoundError:
                raise MissingPrivateKey(f"no private key {kid}.pem in {self.key_dir}") from None
            self._parsed[kid] = jwk.construct(pem, ALGORITHMS[0])
        return self._parsed[kid]

    # -- records ------------------------------------------------------------------------

    async def all(self) -> list[KeyRecord]:
        """Every key not yet retired, oldest first."""
        cursor = self.col.find({"state": {"$in": list(PUBLISHED_STATES)}}).sort(
            "created_at", ASCENDING
        )
        return [KeyRecord.from_doc(d) async for d in cursor]

    async def insert(self, key: NewKey, *, state: str, now: datetime) -> None:
        """Record a new key (its PEM must already be written)."""
        await self.col.insert_one(
            {
                "_id": key.kid,
                "jwk": key.jwk.model_dump(),
                "state": state,
                "created_at": now,
                "retires_at": None,
            }
        )

    async def move(self, kid: str, from_state: str, to_state: str, **fields: Any) -> bool:
        """Change a key's state if it is in ``from_state``; ``True`` if it moved."""
        result = await self.col.update_one(
            {"_id": kid, "state": from_state}, {"$set": {"state": to_state, **fields}}
        )
        self.forget_signer()
        return result.modified_count == 1

    # -- signing ------------------------------------------------------------------------

    def forget_signer(self) -> None:
        """Drop the cached active key (after a rotation)."""
        self._signer = None

    async def signer(self) -> tuple[str, Any]:
        """``(kid, private key)`` of the active key (cached for ``cache_s``)."""
        now = self.clock.monotonic()
        if self._signer is not None and now < self._signer_until:
            return self._signer
        doc = await self.col.find_one({"state": "active"})
        if doc is None:
            raise MissingPrivateKey("no active signing key")
        self._signer = (doc["_id"], self._private(doc["_id"]))
        self._signer_until = now + self.cache_s
        return self._signer
