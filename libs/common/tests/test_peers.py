"""The one rule for which peers a user may use, and how selections pick."""

from __future__ import annotations

import random

import pytest

from peertrain.common.peers import NotEnoughPeers, may_use, own_first, pick
from peertrain.common.security import Principal


def _user(subject: str, *roles: str) -> Principal:
    return Principal(subject, frozenset({"user", *roles}), "t", 0, 1)


def test_own_shared_or_admin() -> None:
    alice, admin = _user("alice"), _user("root", "admin")
    assert may_use(alice, owner_id="alice", shared=False)
    assert may_use(alice, owner_id="bob", shared=True)
    assert not may_use(alice, owner_id="bob", shared=False)
    assert not may_use(alice, owner_id=None, shared=True)  # nobody's peer
    assert may_use(admin, owner_id="bob", shared=False)


def test_pick_ranks_own_first_then_by_key_and_refuses_too_few() -> None:
    peers = [("p1", "bob", 64.0), ("p2", "alice", 8.0), ("p3", "bob", 32.0)]
    rank = own_first("alice", lambda p: p[1], lambda p: (-p[2], p[0]))
    assert [p[0] for p in pick(peers, 2, rank=rank)] == ["p2", "p1"]
    assert len(pick(peers, 3, rank=None, rng=random.Random(1))) == 3
    with pytest.raises(NotEnoughPeers) as caught:
        pick(peers, 4, rank=rank)
    assert caught.value.detail == {"requested": 4, "available": 3}
    assert caught.value.status_code == 409 and caught.value.code == "not_enough_peers"
