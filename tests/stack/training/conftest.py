"""Fixtures of the end-to-end training tests (see training_support.py)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from training_support import INSTANCES, Platform, create_job, finished, peers_active, run_platform


@pytest.fixture(scope="session")
def platform(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    """Auth, registry, dataset, orchestrator and aggregator, running; peers on demand."""
    yield from run_platform(run_id, tmp_path_factory, instances=INSTANCES)


@pytest.fixture
async def http(platform: Platform) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the gateway, logged in as the platform's user."""
    async with platform.client() as client:
        yield client


@pytest.fixture(scope="session")
async def short_mnist_job(platform: Platform) -> str:
    """The demo's data and model (MNIST 10k as uploaded, an MLP) kept short, 2 peers and
    2 rounds, run to completion once: for the tests that use an ended job's results
    (``peertrain predict``, ``peertrain job export --mlflow``)."""
    from test_mnist import mnist, mnist_job

    dataset_id = await mnist(platform)
    peers = [platform.peer(f"p{i}").peer_id for i in range(2)]
    await peers_active(platform, peers)
    job_id = await create_job(platform, mnist_job(dataset_id, peers, rounds=2))
    job = await finished(platform, job_id)
    assert job["state"] == "completed", job
    return job_id
