from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakeapi import FakeApi


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()
