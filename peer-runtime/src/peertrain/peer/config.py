"""Where the runtime keeps its files, and its settings (``PEERTRAIN_PEER_*``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["PeerSettings", "default_config_dir"]

APP_DIR = "peertrain-peer"


def default_config_dir() -> Path:
    """The user's config directory for the runtime (XDG on Linux).

    ``$XDG_CONFIG_HOME/peertrain-peer`` (``~/.config/peertrain-peer``) on Linux,
    ``~/Library/Application Support/peertrain-peer`` on macOS, ``%APPDATA%`` on Windows.
    """
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / APP_DIR


class PeerSettings(BaseSettings):
    """Runtime settings; command-line options override them.

    Attributes
    ----------
    config_dir
        Identity, broker credentials and status live here (mode 0700, files 0600).
    heartbeat_interval_s
        How often the runtime says it is alive.
    announce_every
        Re-announce the device specs every this many heartbeats (cheap; heals an
        announce the registry could not handle).
    reconnect_max_s
        Upper bound of the reconnect backoff.
    reconnect_early_max_s, reconnect_early_s
        Upper bound of the reconnect backoff during the first ``reconnect_early_s`` of
        an outage (a restart of the platform is over in seconds).
    token_renew_fraction
        Renew the access token when this fraction of its lifetime is left.
    threads
        CPU threads training may use; ``None``: the cores the machine has (as announced
        in the device specs).
    device
        ``cpu``, ``cuda``, ``cuda:1``, ``mps``; ``None`` picks CUDA, then MPS, then CPU.
    cache_max_files
        Shards kept in ``<config_dir>/cache/shards`` (least recently used dropped first).
    slowdown
        After each task's training, wait ``slowdown - 1`` times its measured compute
        time (``--slowdown``; ``PEERTRAIN_PEER_SLOWDOWN``): a peer of factor 4 is 4 times
        slower. For benchmarks and tests of uneven volunteers; 1 (the default) never waits.
    """

    model_config = SettingsConfigDict(env_prefix="PEERTRAIN_PEER_", extra="ignore")

    config_dir: Path = Field(default_factory=default_config_dir)
    heartbeat_interval_s: float = Field(default=5.0, ge=0.5, le=3600)
    announce_every: int = Field(default=60, ge=1)
    reconnect_max_s: float = Field(default=15.0, gt=0)
    reconnect_early_max_s: float = Field(default=2.0, gt=0)
    reconnect_early_s: float = Field(default=60.0, ge=0)
    token_renew_fraction: float = Field(default=0.3, gt=0, lt=1)
    http_timeout_s: float = Field(default=15.0, gt=0)
    log_level: str = "INFO"
    threads: int | None = Field(default=None, ge=1, le=1024)
    device: str | None = Field(default=None, max_length=20)
    cache_max_files: int = Field(default=8, ge=1, le=1000)
    slowdown: float = Field(default=1.0, ge=1, le=1000)
