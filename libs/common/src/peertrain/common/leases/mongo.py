"""Leases in MongoDB (FerretDB locally): the store of a service that has a database."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from .book import Lease

__all__ = ["MongoLeaseStore"]


class MongoLeaseStore:
    """Leases as documents ``{_id: key, holder, until, token}`` in ``collection``, claims
    as ``{_id: claim id, at}`` in ``<collection>_claims`` beside it.

    Parameters
    ----------
    collection
        ``leases`` in the service's database (a tz-aware client).
    """

    def __init__(self, collection: AsyncCollection[Any]) -> None:
        self.collection = collection
        self.claims: AsyncCollection[Any] = collection.database[f"{collection.name}_claims"]
        """One document per lease superseded (taken over or swept): ``_id`` is unique."""

    @staticmethod
    def _lease(doc: dict[str, Any]) -> Lease:
        return Lease(doc["_id"], doc["holder"], doc["until"], doc.get("token"))

    async def get(self, key: str) -> Lease | None:
        doc = await self.collection.find_one({"_id": key})
        return None if doc is None else self._lease(doc)

    async def read_all(self) -> list[Lease]:
        return [self._lease(doc) for doc in await self.collection.find({}).to_list()]

    async def create(self, lease: Lease) -> bool:
        doc = {"_id": lease.key, "holder": lease.holder, "until": lease.until, "token": lease.token}
        try:
            await self.collection.insert_one(doc)
        except DuplicateKeyError:  # another instance created it first
            return False
        return True

    async def replace(self, old: Lease, new: Lease) -> bool:
        taken = await self.collection.update_one(
            {"_id": old.key, "token": old.token},
            {"$set": {"holder": new.holder, "until": new.until, "token": new.token}},
        )
        return taken.modified_count == 1

    async def renew(self, keys: list[str], holder: str, until: datetime) -> None:
        await self.collection.update_many(
            {"_id": {"$in": keys}, "holder": holder}, {"$set": {"until": until}}
        )

    async def join(self, member: str, holder: str, until: datetime) -> None:
        await self.collection.update_one(
            {"_id": member}, {"$set": {"holder": holder, "until": until}}, upsert=True
        )

    async def release(self, keys: list[str], holder: str) -> None:
        await self.collection.delete_many({"_id": {"$in": keys}, "holder": holder})

    async def expire(self, keys: list[str], before: datetime) -> None:
        await self.collection.delete_many({"_id": {"$in": keys}, "until": {"$lt": before}})

    async def remove(self, lease: Lease) -> None:
        await self.collection.delete_one({"_id": lease.key, "token": lease.token})

    async def supersede(self, claim_id: str, at: datetime) -> bool:
        try:
            await self.claims.insert_one({"_id": claim_id, "at": at})
        except DuplicateKeyError:
            return False
        return True

    async def forget_claims(self, before: datetime) -> None:
        await self.claims.delete_many({"at": {"$lt": before}})
