"""One pagination convention for every list: ``?limit=&offset=`` in, a :class:`Page` out.

A list route takes :data:`PagingDep` and answers ``Page[Item]``::

    @router.get("")
    async def list_things(paging: PagingDep, ...) -> Page[ThingPublic]:
        found = await store.list(limit=paging.fetch, offset=paging.offset)
        # or, for a list held in memory: found = paging.window(every)
        return Page[ThingPublic].of([ThingPublic.of(t) for t in found], paging)

``next_offset`` is the ``offset`` of the next page, ``null`` on the last one; a client
reads every item by following it. A route fetches one item more than ``limit``
(:attr:`Paging.fetch`), which says whether another page follows without counting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Generic, TypeVar

from fastapi import Depends, Query
from pydantic import BaseModel, Field

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "MAX_OFFSET", "Page", "Paging", "PagingDep", "get_paging"]

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_OFFSET = 1_000_000

T = TypeVar("T")


@dataclass(frozen=True)
class Paging:
    """Which window of a list the caller asked for."""

    limit: int = DEFAULT_LIMIT
    offset: int = 0

    @property
    def fetch(self) -> int:
        """How many items to read at ``offset``: one more than a page."""
        return self.limit + 1

    def window(self, every: Sequence[T]) -> Sequence[T]:
        """The :attr:`fetch` items at ``offset`` of a whole list held in memory."""
        return every[self.offset : self.offset + self.fetch]


def get_paging(
    limit: Annotated[
        int, Query(ge=1, le=MAX_LIMIT, description="Most items in the page")
    ] = DEFAULT_LIMIT,
    offset: Annotated[
        int, Query(ge=0, le=MAX_OFFSET, description="Items to skip (a page's next_offset)")
    ] = 0,
) -> Paging:
    """The ``limit`` and ``offset`` query parameters (422 out of bounds)."""
    return Paging(limit=limit, offset=offset)


PagingDep = Annotated[Paging, Depends(get_paging)]


class Page(BaseModel, Generic[T]):
    """One page of a list, in the list's order."""

    items: list[T]
    next_offset: int | None = Field(
        description="The offset of the next page; null when this is the last"
    )

    @classmethod
    def of(cls, fetched: Sequence[T], paging: Paging) -> Page[T]:
        """From the up to :attr:`Paging.fetch` items read at ``paging.offset``."""
        more = len(fetched) > paging.limit
        return cls(
            items=list(fetched[: paging.limit]),
            next_offset=paging.offset + paging.limit if more else None,
        )
