"""Identity and credentials on disk: mode 0600, atomic, refused when too open."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from peertrain.peer.config import PeerSettings, default_config_dir
from peertrain.peer.files import IDENTITY_FILE, ConfigError, read_model, write_json
from peertrain.peer.identity import BrokerAccess, Identity

IDENTITY = Identity(
    api="http://127.0.0.1:8080",
    peer_id="p1",
    peer_secret="pts_secret",
    owner_id="u1",
    name="box",
    enrolled_at=datetime(2026, 1, 1, tzinfo=UTC),
)


def test_written_with_mode_0600_in_a_0700_directory(tmp_path: Path) -> None:
    directory = tmp_path / "conf"
    old = os.umask(0)  # even with a permissive umask
    try:
        path = write_json(directory, IDENTITY_FILE, IDENTITY.model_dump(mode="json"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert read_model(directory, IDENTITY_FILE, Identity) == IDENTITY
    assert [p.name for p in directory.iterdir()] == [IDENTITY_FILE]  # no temp file left


def test_a_secret_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = write_json(tmp_path, IDENTITY_FILE, IDENTITY.model_dump(mode="json"))
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        read_model(tmp_path, IDENTITY_FILE, Identity)


def test_missing_is_none_and_broken_is_an_error(tmp_path: Path) -> None:
    assert read_model(tmp_path, IDENTITY_FILE, Identity) is None
    write_json(tmp_path, IDENTITY_FILE, {"nope": 1})
    with pytest.raises(ConfigError):
        read_model(tmp_path, IDENTITY_FILE, Identity)


def test_config_dir_defaults_to_xdg_and_env_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert default_config_dir() == tmp_path / "xdg" / "peertrain-peer"
    monkeypatch.setenv("PEERTRAIN_PEER_CONFIG_DIR", str(tmp_path / "mine"))
    assert PeerSettings().config_dir == tmp_path / "mine"


def test_broker_url_carries_quoted_credentials() -> None:
    access = BrokerAccess(
        username="peer-p1",
        password="a/b:c@d",
        url="amqp://rabbit.example:5672/",
        queue="peer.p1",
        telemetry_exchange="peertrain.telemetry",
        routing_key_prefix="peer.p1.",
    )
    assert access.amqp_url() == "amqp://peer-p1:a%2Fb%3Ac%40d@rabbit.example:5672/"
