"""Global log positions that only ever grow, built on the one atomic primitive.

On FerretDB 1.x ``findAndModify`` and conditional updates read and write in separate
steps, so a ``$inc`` counter can hand out the same number twice under concurrency. An
insert under a unique index is atomic everywhere, so a position is *claimed* by
inserting ``{_id: n}``:

* a process claims upward from what it knows is taken, one number at a time;
* a duplicate means someone else holds that number: go on above it, never jumping past
  numbers that might still be free.

Hence when ``n`` is claimed, every number below it has been claimed already, so the
claim order is the position order: an append that starts after another one ended gets
larger positions (which keeps each stream's positions in ``seq`` order). Positions may
have gaps.

Claims live in segments of :data:`SEGMENT` numbers, one collection each
(``<log>_positions_<k>`` holds ``k * SEGMENT`` up to ``(k + 1) * SEGMENT - 1``). After a
conflict the claimer probes upward one number at a time (each probe an insert); only
after :data:`MAX_PROBES` failed probes in a row, and at start-up, does it read the
highest claimed number. FerretDB answers that sorted read by scanning, so it reads the
newest segment only: its cost is bounded by the segment size, not by the log's.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

__all__ = ["MAX_PROBES", "SEGMENT", "PositionAllocator"]

MAX_PROBES = 16
"""Failed claims in a row before reading the highest claimed number instead."""

SEGMENT = 10_000
"""Positions per claims collection (bounds the cost of reading the highest claim)."""

_DUPLICATE_KEY = 11000

Doc = dict[str, Any]


class PositionAllocator:
    """Hands out increasing global positions for one log collection."""

    def __init__(self, db: AsyncDatabase[Doc], log_collection: str) -> None:
        self.db = db
        self.prefix = f"{log_collection}_positions_"
        # Before segments, all claims were in one collection; still read at start-up so
        # that a log written by an older version goes on above its highest position.
        self._legacy: AsyncCollection[Doc] = db[f"{log_collection}_positions"]
        self._next: int | None = None
        self._lock = asyncio.Lock()

    def segment(self, number: int) -> AsyncCollection[Doc]:
        """The claims collection that holds ``number``."""
        return self.db[f"{self.prefix}{number // SEGMENT}"]

    async def highest_claimed(self) -> int:
        """The highest claimed position (0 when none): a read of the newest segment."""
        names = await self.db.list_collection_names()
        segments = [int(n[len(self.prefix) :]) for n in names if _is_segment(n, self.prefix)]
        sources = [self.db[f"{self.prefix}{max(segments)}"]] if segments else []
        if not segments and self._legacy.name in names:
            sources.append(self._legacy)
        highest = 0
        for claims in sources:
            doc = await claims.find_one({}, {"_id": 1}, sort=[("_id", -1)])
            if doc is not None:
                highest = max(highest, int(doc["_id"]))
        return highest

    async def claim(self, numbers: list[int]) -> int:
        """Insert claims for consecutive ``numbers``; return how many, from the first, held.

        Raises on anything but a duplicate key.
        """
        held = 0
        for seg, part_iter in itertools.groupby(numbers, key=lambda n: n // SEGMENT):
            part = list(part_iter)
            try:
                await self.db[f"{self.prefix}{seg}"].insert_many(
                    [{"_id": p} for p in part], ordered=True
                )
            except BulkWriteError as exc:
                if any(e.get("code") != _DUPLICATE_KEY for e in exc.details.get("writeErrors", [])):
                    raise
                return held + int(exc.details.get("nInserted", 0))
            held += len(part)
        return held

    async def allocate(self, count: int) -> list[int]:
        """Claim ``count`` increasing positions."""
        async with self._lock:  # one claimer per process: no contention with ourselves
            if self._next is None:
                self._next = await self.highest_claimed() + 1
            got: list[int] = []
            probes = 0
            while len(got) < count:
                want = list(range(self._next, self._next + count - len(got)))
                done = await self.claim(want)
                got += want[:done]
                if done == len(want):
                    self._next = want[-1] + 1
                    continue
                taken = want[done]
                probes = 0 if done else probes + 1
                if probes < MAX_PROBES:
                    self._next = taken + 1
                else:
                    self._next = max(taken + 1, await self.highest_claimed() + 1)
                    probes = 0
            return got


def _is_segment(name: str, prefix: str) -> bool:
    return name.startswith(prefix) and name[len(prefix) :].isdigit()
