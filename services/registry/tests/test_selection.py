"""Visibility, filters and selection strategies (pure)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from peertrain.common.events.peers import DeviceSpecs, GpuSpecs
from peertrain.common.security import Principal
from peertrain.registry.domain.errors import NotEnoughPeers
from peertrain.registry.domain.liveness import Status
from peertrain.registry.domain.peer import PeerRecord
from peertrain.registry.domain.selection import (
    PeerFilters,
    PeerView,
    choose,
    matches,
    visible_to,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def specs(ram: float, gpu: float | None = None) -> DeviceSpecs:
    return DeviceSpecs(
        os="Linux",
        python_version="3.11",
        cpu_model="x",
        cpu_cores=4,
        cpu_threads=8,
        ram_gb=ram,
        disk_free_gb=10,
        device="cuda" if gpu else "cpu",
        gpus=(GpuSpecs(name="A100", memory_gb=gpu),) if gpu else (),
        peertrain_version="0.1.0",
    )


def view(
    peer: str,
    *,
    ram: float = 8,
    gpu: float | None = None,
    status: Status = Status.ACTIVE,
    owner: str = "u",
    shared: bool = False,
    disabled: bool = False,
    registered: bool = True,
) -> PeerView:
    record = PeerRecord(
        peer_id=peer,
        owner_id=owner,
        name=peer,
        enrolled=True,
        registered=registered,
        queue=f"peer.{peer}",
        specs=specs(ram, gpu),
        shared=shared,
        disabled=disabled,
    )
    return PeerView(record, status, NOW)


def who(subject: str, *roles: str, owner: str | None = None) -> Principal:
    return Principal(subject, frozenset(roles or ("user",)), "jti", 0, 1, owner=owner)


def test_visibility() -> None:
    mine, shared, other = (
        view("a").record,
        view("b", owner="v", shared=True).record,
        view("c", owner="v").record,
    )
    user = who("u")
    assert visible_to(mine, user) and visible_to(shared, user) and not visible_to(other, user)
    admin = who("x", "user", "admin")
    assert all(visible_to(r, admin) for r in (mine, shared, other))
    peer = who("c", "peer", owner="v")
    assert visible_to(other, peer) and not visible_to(shared, peer)


def test_filters() -> None:
    gpu = view("g", ram=8, gpu=40)
    cpu = view("c", ram=64)
    assert matches(gpu, PeerFilters(device="cuda")) and not matches(cpu, PeerFilters(device="cuda"))
    # training-device memory: GPU memory on cuda peers, RAM otherwise
    assert matches(gpu, PeerFilters(min_memory_gb=32))
    assert matches(cpu, PeerFilters(min_memory_gb=32))
    assert not matches(view("small", ram=4), PeerFilters(min_memory_gb=32))
    assert not matches(view("s", status=Status.STALE), PeerFilters(status=Status.ACTIVE))
    assert matches(view("s", owner="me"), PeerFilters(owner_id="me"))


def test_choose_by_memory_gpu_and_random() -> None:
    peers = [view("a", ram=8), view("b", ram=64), view("c", ram=8, gpu=24), view("d", ram=32)]
    assert [v.record.peer_id for v in choose(peers, 2, "memory")] == ["b", "d"]
    assert [v.record.peer_id for v in choose(peers, 2, "gpu")] == ["c", "b"]
    picked = choose(peers, 3, "random", rng=random.Random(1))
    assert len({v.record.peer_id for v in picked}) == 3
    assert picked == choose(peers, 3, "random", rng=random.Random(1))


def test_only_usable_peers_are_chosen_and_too_few_is_a_conflict() -> None:
    peers = [
        view("ok"),
        view("stale", status=Status.STALE),
        view("off", status=Status.OFFLINE),
        view("disabled", disabled=True),
        view("unregistered", registered=False),
    ]
    assert [v.record.peer_id for v in choose(peers, 1, "memory")] == ["ok"]
    with pytest.raises(NotEnoughPeers) as caught:
        choose(peers, 2, "memory")
    assert caught.value.detail == {"requested": 2, "available": 1}
    assert caught.value.status_code == 409
