"""Which peers a user may put to work, and how a selection picks among them.

One rule for both services that need it: the registry (listing peers and
``POST /api/selections``) and the orchestrator (checking a job's named peers and
picking them for ``selection``). Pure: no I/O, no service state.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from peertrain.common.errors import Conflict
from peertrain.common.security import Principal

__all__ = ["RANKED_MEMORY_GB", "NotEnoughPeers", "may_use", "own_first", "pick"]

T = TypeVar("T")

RANKED_MEMORY_GB = 64.0
"""Claimed memory above this ranks no higher: a claim is only a claim."""


class NotEnoughPeers(Conflict):
    """Fewer usable peers match than a selection asked for (409)."""

    code = "not_enough_peers"


def may_use(who: Principal, *, owner_id: str | None, shared: bool) -> bool:
    """Whether ``who`` may see a peer and put it in a job: their own, a shared one, or
    any for an admin. A peer with no known owner is nobody's (but an admin's)."""
    if who.is_admin:
        return True
    return owner_id is not None and (owner_id == who.subject or shared)


def own_first(
    subject: str | None, owner_of: Callable[[T], str | None], key: Callable[[T], tuple[Any, ...]]
) -> Callable[[T], tuple[Any, ...]]:
    """``key``, with the caller's (``subject``'s) own peers ranked before anyone else's:
    a stranger's shared peer cannot push out the caller's own by what it claims."""

    def ranked(item: T) -> tuple[Any, ...]:
        return (owner_of(item) != subject, *key(item))

    return ranked


def pick(
    pool: Sequence[T],
    count: int,
    *,
    rank: Callable[[T], tuple[Any, ...]] | None,
    rng: random.Random | None = None,
) -> list[T]:
    """The ``count`` best of ``pool`` by ``rank`` (ascending; a tie-break on the peer id
    in ``rank`` keeps the answer stable), or a uniform sample when ``rank`` is ``None``.

    Raises
    ------
    NotEnoughPeers
        If ``pool`` has fewer than ``count`` items.
    """
    if len(pool) < count:
        raise NotEnoughPeers(
            f"the selection asks for {count} peer(s); only {len(pool)} usable peer(s) match",
            detail={"requested": count, "available": len(pool)},
        )
    if rank is None:
        return (rng or random.SystemRandom()).sample(list(pool), count)
    return sorted(pool, key=rank)[:count]
