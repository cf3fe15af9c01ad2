from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakeapi import FakeApi


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture(autouse=True)
def config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A client given no token store keeps its tokens in the config folder: never the
    user's own, in a test; and no API from the environment."""
    folder = tmp_path / "default-config"
    monkeypatch.setenv("PEERTRAIN_CONFIG_DIR", str(folder))
    monkeypatch.delenv("PEERTRAIN_API", raising=False)
    return folder
