"""Backoff, specs detection, token renewal and the worker stub (no network)."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from peertrain.common.events.peers import DeviceSpecs
from peertrain.peer.api import ApiError, IssuedToken
from peertrain.peer.backoff import Backoff
from peertrain.peer.identity import Identity
from peertrain.peer.specs import detect_specs, torch_specs
from peertrain.peer.tokens import TokenManager
from peertrain.peer.worker import Worker, WorkItem


def test_backoff_doubles_to_a_cap_with_jitter_and_resets() -> None:
    b = Backoff(initial_s=1, max_s=8, jitter=0.0)
    assert [b.next() for _ in range(5)] == [1, 2, 4, 8, 8]
    b.reset()
    assert b.next() == 1
    j = Backoff(initial_s=1, max_s=8, jitter=0.5, rng=random.Random(3))
    assert all(0.5 <= j.next() <= 1.5 for _ in range(1))


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_reconnects_stay_within_2s_for_the_first_minute_then_grow_to_the_max() -> None:
    clock = FakeClock()
    b = Backoff(initial_s=0.5, max_s=15, jitter=0.0, early_max_s=2.0, clock=clock)
    early = []
    while clock.t < 1060.0:  # a broker away for a minute: the peer keeps knocking
        early.append(b.next())
        clock.t += early[-1] + 0.01  # each failed attempt costs a little
    assert early[:4] == [0.5, 1.0, 2.0, 2.0]
    assert max(early) == 2.0 and len(early) > 25
    late = [b.next() for _ in range(5)]  # past the first minute: doubling to the max
    assert late == [4.0, 8.0, 15.0, 15.0, 15.0]
    b.reset()  # connected again: the next outage starts young
    clock.t += 3600
    assert [b.next() for _ in range(4)] == [0.5, 1.0, 2.0, 2.0]


def test_reconnect_delays_are_jittered_below_their_base_never_above() -> None:
    clock = FakeClock()
    rng = random.Random(7)
    b = Backoff(initial_s=0.5, max_s=15, jitter=0.5, early_max_s=2.0, rng=rng, clock=clock)
    delays = [b.next() for _ in range(200)]
    assert all(0.25 <= d <= 0.5 for d in delays[:1])
    assert all(1.0 <= d <= 2.0 for d in delays[2:])  # capped at 2 s, spread over a second
    assert len({round(d, 3) for d in delays[2:]}) > 100  # peers do not come back in step
    # two peers that lost the broker together draw different delays
    a = Backoff(early_max_s=2.0, rng=random.Random(1), clock=clock)
    c = Backoff(early_max_s=2.0, rng=random.Random(2), clock=clock)
    assert [a.next() for _ in range(5)] != [c.next() for _ in range(5)]


def test_specs_of_this_machine_without_torch() -> None:
    specs = detect_specs()
    assert isinstance(specs, DeviceSpecs)
    assert specs.cpu_threads >= 1 and specs.cpu_cores >= 1 and specs.ram_gb > 0
    assert specs.disk_free_gb >= 0 and specs.os and specs.python_version


def test_specs_through_a_cuda_torch() -> None:
    props = SimpleNamespace(name="NVIDIA H200", total_memory=141 * 1024**3)
    torch = SimpleNamespace(
        __version__="2.9.1+cu128",
        version=SimpleNamespace(cuda="12.8"),
        cuda=SimpleNamespace(
            is_available=lambda: True,
            device_count=lambda: 2,
            get_device_properties=lambda i: props,
        ),
        backends=SimpleNamespace(),
    )
    out = torch_specs(torch)
    assert out["device"] == "cuda" and out["cuda_version"] == "12.8"
    assert out["torch_version"] == "2.9.1"
    assert [g.name for g in out["gpus"]] == ["NVIDIA H200"] * 2
    assert out["gpus"][0].memory_gb == pytest.approx(141)


def test_specs_through_a_broken_torch_fall_back_to_cpu() -> None:
    def boom() -> bool:
        raise RuntimeError("driver")

    torch = SimpleNamespace(
        __version__="2.9.1",
        version=SimpleNamespace(cuda=None),
        cuda=SimpleNamespace(is_available=boom),
        backends=SimpleNamespace(),
    )
    assert torch_specs(torch)["device"] == "cpu"


class FakeApi:
    def __init__(self) -> None:
        self.calls = 0
        self.fail = False
        self.called = asyncio.Event()

    async def token(self, peer_id: str, secret: str) -> IssuedToken:
        self.calls += 1
        self.called.set()
        if self.fail:
            raise ApiError("down")
        return IssuedToken(f"t{self.calls}", 900)


IDENTITY = Identity(
    api="x", peer_id="p", peer_secret="s", owner_id="u", name="n", enrolled_at=datetime.now(UTC)
)


async def test_tokens_are_renewed_before_expiry_and_kept_while_auth_is_away() -> None:
    now = [0.0]
    api = FakeApi()
    tokens = TokenManager(api, IDENTITY, renew_fraction=0.3, clock=lambda: now[0])  # type: ignore[arg-type]
    assert await tokens.get() == "t1"
    now[0] = 600  # 2/3 of 900 s: not yet
    assert await tokens.get() == "t1"
    now[0] = 631
    assert await tokens.get() == "t2"
    api.fail = True
    now[0] = 631 + 700
    assert await tokens.get() == "t2"  # auth away: the current one while it lasts
    now[0] = 631 + 901
    with pytest.raises(ApiError):
        await tokens.get()


async def test_wait_for_token_stops_when_asked() -> None:
    api = FakeApi()
    api.fail = True
    stop = asyncio.Event()
    tokens = TokenManager(api, IDENTITY)  # type: ignore[arg-type]
    task = asyncio.create_task(tokens.wait_for_token(stop))
    await asyncio.wait_for(api.called.wait(), 10)  # refused once: it waits to retry
    stop.set()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_the_worker_runs_items_off_the_calling_thread() -> None:
    seen: list[Any] = []

    class Recording(Worker):
        def handle(self, item: WorkItem) -> None:
            import threading

            seen.append((item.task, threading.current_thread().name))

    worker = Recording()
    worker.start()
    worker.submit(WorkItem(routing_key="peer.p.task", body=b'{"type": "task"}'))
    worker.submit(WorkItem(routing_key="peer.p.task", body=b"not json"))
    deadline = time.monotonic() + 5
    while len(seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.stop()
    assert seen == [(None, "peertrain-worker"), (None, "peertrain-worker")]
