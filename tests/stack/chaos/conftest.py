"""Fixtures of the chaos test: a platform whose peers reach RabbitMQ through a proxy."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
sys.path.insert(0, str(Path(__file__).parents[1] / "training"))
sys.path.insert(0, str(Path(__file__).parents[2] / "contract"))

from chaos import chaos_platform
from hanging_proxy import ThreadedProxy
from training_support import Platform

from peertrain.testkit.common import stack_port


@pytest.fixture(scope="module")
def link() -> Iterator[ThreadedProxy]:
    """The peers' link to RabbitMQ, which the schedule hangs."""
    proxy = ThreadedProxy(stack_port(5672))
    yield proxy
    proxy.close()


@pytest.fixture(scope="module")
def platform(
    run_id: str, tmp_path_factory: pytest.TempPathFactory, link: ThreadedProxy
) -> Iterator[Platform]:
    """Two orchestrators and two aggregators, peers on the proxied link."""
    yield from chaos_platform(run_id, tmp_path_factory, link)
