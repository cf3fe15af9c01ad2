"""Global log positions that only ever grow, built on the one atomic primitive.

On FerretDB 1.x (SQLite) ``findAndModify`` and conditional updates read and write in
separate steps, so a ``$inc`` counter hands out the same numbers twice under
concurrency (measured: overlapping ranges with 4 writers). An insert under a unique
index is atomic everywhere, so a position is *claimed* by inserting ``{_id: n}``:

* a process claims upward from what it knows is taken, one number at a time;
* a duplicate means someone else holds that number: catch up to the highest claimed
  number (read from the claims), never jumping past numbers that might still be free.

Hence when ``n`` is claimed, every number below it has been claimed already, so the
claim order is the position order: an append that starts after another one ended
gets larger positions (which keeps each stream's positions in ``seq`` order).
Positions may have gaps. The claims collection is only ever inserted into, which is
cheap whatever its size. After a conflict the claimer first probes upward one number
at a time (each probe an insert: a failed one means that number is taken, so no free
number is ever skipped); only after :data:`MAX_PROBES` failed probes in a row does it
read the highest claimed number, which is a scan of the claims on FerretDB (measured:
about 50 ms at 2,000 claims, growing with the log). Services appending in turn
(orchestrator and aggregator during a round) conflict on almost every append, so the
read is kept for long absences.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

__all__ = ["MAX_PROBES", "PositionAllocator"]

MAX_PROBES = 16
"""Failed claims in a row before reading the highest claimed number instead."""

Doc = dict[str, Any]


class PositionAllocator:
    """Hands out increasing global positions for one log collection."""

    def __init__(self, db: AsyncDatabase[Doc], log_collection: str) -> None:
        self.claims: AsyncCollection[Doc] = db[f"{log_collection}_positions"]
        self._next: int | None = None
        self._lock = asyncio.Lock()

    async def _highest_claimed(self) -> int:
        doc = await self.claims.find_one({}, {"_id": 1}, sort=[("_id", -1)])
        return int(doc["_id"]) if doc else 0

    async def allocate(self, count: int) -> list[int]:
        """Claim ``count`` increasing positions."""
        async with self._lock:  # one claimer per process: no contention with ourselves
            if self._next is None:
                self._next = await self._highest_claimed() + 1
            got: list[int] = []
            probes = 0
            while len(got) < count:
                want = list(range(self._next, self._next + count - len(got)))
                try:
                    await self.claims.insert_many([{"_id": p} for p in want], ordered=True)
                except BulkWriteError as exc:
                    if any(e.get("code") != 11000 for e in exc.details.get("writeErrors", [])):
                        raise
                    done = int(exc.details.get("nInserted", 0))
                    got += want[:done]
                    taken = want[done]
                    probes = 0 if done else probes + 1
                    if probes < MAX_PROBES:
                        self._next = taken + 1
                    else:
                        self._next = max(taken + 1, await self._highest_claimed() + 1)
                        probes = 0
                    continue
                got += want
                self._next = want[-1] + 1
            return got
