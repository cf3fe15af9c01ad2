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

So the claimed numbers are every number from 1 up to the highest claim, and whether a
number is claimed is one ``_id`` lookup. After a conflict the claimer finds the lowest
free number above the one it lost by lookups: doubling steps until a free one, then
halving the gap (:meth:`PositionAllocator.first_free_above`). A process that appends
rarely, while others append a lot, is hundreds of numbers behind; it catches up in
about twice the logarithm of that many lookups. (It used to probe upward one failed
insert at a time, then read the newest segment of claims in full: FerretDB answers a
sorted read by scanning.) At start-up the same search runs from the newest segment's
first number.

Services append in answer to each other's events, so a process's next number is
usually stale by the few events that made it act, and each append paid a lost claim and
a search. The bus tells it better: every event it consumes carries its position
(:meth:`PositionAllocator.observe`). Before claiming, the highest one seen is looked up
in this log's claims (one lookup; an event of another log sharing the broker may hold
any number), and a claimed one moves the next claim above it: every number below a
claimed one is claimed, so nothing free is jumped over.

Claims live in segments of :data:`SEGMENT` numbers, one collection each
(``<log>_positions_<k>`` holds ``k * SEGMENT`` up to ``(k + 1) * SEGMENT - 1``).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from peertrain.common.metrics import POSITION_CLAIMS_LOST

__all__ = ["SEGMENT", "PositionAllocator"]

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
        self._seen = 0  # the highest position observed on the bus, not yet checked
        self._lock = asyncio.Lock()

    def segment(self, number: int) -> AsyncCollection[Doc]:
        """The claims collection that holds ``number``."""
        return self.db[f"{self.prefix}{number // SEGMENT}"]

    async def highest_claimed(self) -> int:
        """The highest claimed position (0 when none)."""
        names = await self.db.list_collection_names()
        segments = [int(n[len(self.prefix) :]) for n in names if _is_segment(n, self.prefix)]
        if segments:
            first = max(max(segments) * SEGMENT, 1)
            if await self.claimed(first):
                return await self.first_free_above(first) - 1
        # No segment (a log written before segments keeps its claims in one collection),
        # or one without its first number (not written by this allocator): read them.
        sources = [self.db[f"{self.prefix}{max(segments)}"]] if segments else []
        if not segments and self._legacy.name in names:
            sources.append(self._legacy)
        highest = 0
        for claims in sources:
            doc = await claims.find_one({}, {"_id": 1}, sort=[("_id", -1)])
            if doc is not None:
                highest = max(highest, int(doc["_id"]))
        return highest

    async def claimed(self, number: int) -> bool:
        """Whether ``number`` is claimed (one ``_id`` lookup)."""
        return await self.segment(number).find_one({"_id": number}, {"_id": 1}) is not None

    async def first_free_above(self, taken: int) -> int:
        """The lowest number above ``taken`` (a claimed one) that was free when looked up.

        Claims are every number up to the highest, so the claimed ones above ``taken``
        are a run: steps that double find a free number past it, then halving the
        interval finds the run's end. Never past a free number, so claiming from the
        answer keeps the claim order the position order.
        """
        low, step = taken, 1  # low: claimed
        high = low + step
        while await self.claimed(high):
            low, step = high, step * 2
            high = low + step
        while high - low > 1:  # low claimed, high free
            middle = (low + high) // 2
            if await self.claimed(middle):
                low = middle
            else:
                high = middle
        return high

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
                POSITION_CLAIMS_LOST.inc()
                return held + int(exc.details.get("nInserted", 0))
            held += len(part)
        return held

    def observe(self, position: int) -> None:
        """``position`` was seen on an event from the bus: a hint for the next claim.

        Checked against the claims before it is used (see the module docstring).
        """
        self._seen = max(self._seen, position)

    async def allocate(self, count: int) -> list[int]:
        """Claim ``count`` increasing positions."""
        async with self._lock:  # one claimer per process: no contention with ourselves
            if self._next is None:
                self._next = await self.highest_claimed() + 1
            seen, self._seen = self._seen, 0
            if seen >= self._next and await self.claimed(seen):
                self._next = seen + 1
            got: list[int] = []
            while len(got) < count:
                want = list(range(self._next, self._next + count - len(got)))
                done = await self.claim(want)
                got += want[:done]
                if done == len(want):
                    self._next = want[-1] + 1
                else:  # someone else holds want[done]: go on from the first free above
                    self._next = await self.first_free_above(want[done])
            return got


def _is_segment(name: str, prefix: str) -> bool:
    return name.startswith(prefix) and name[len(prefix) :].isdigit()
