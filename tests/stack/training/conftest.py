"""Fixtures of the end-to-end training tests (see training_support.py)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from training_support import Platform, run_platform


@pytest.fixture(scope="session")
def platform(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    """Auth, registry, dataset, orchestrator and aggregator, running; peers on demand."""
    yield from run_platform(run_id, tmp_path_factory)


@pytest.fixture
async def http(platform: Platform) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the gateway, logged in as the platform's user."""
    async with platform.client() as client:
        yield client
