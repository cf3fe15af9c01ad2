"""Where the SDK and the CLI keep their settings, and which API they talk to.

One config folder (:func:`default_config_dir`) serves both: ``credentials.json`` holds
the tokens of each API logged in to (:class:`~peertrain.client.tokens.FileTokenStore`),
``config.json`` the API that ``peertrain login`` logged in to last. A client given no
API URL takes ``$PEERTRAIN_API``, else that saved API, else the local gateway
(:func:`resolve_api_url`), so whatever ``peertrain login`` saved, ``Client()`` finds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = [
    "API_ENV",
    "CONFIG_DIR_ENV",
    "CREDENTIALS_FILE",
    "DEFAULT_API",
    "SETTINGS_FILE",
    "default_config_dir",
    "read_json",
    "remember_api_url",
    "resolve_api_url",
    "saved_api_url",
    "write_private_json",
]

API_ENV = "PEERTRAIN_API"
DEFAULT_API = "http://127.0.0.1:8080"
CONFIG_DIR_ENV = "PEERTRAIN_CONFIG_DIR"
CREDENTIALS_FILE = "credentials.json"
"""Tokens, one entry per API URL."""
SETTINGS_FILE = "config.json"
"""``{"api": URL}``: the API logged in to last."""


def default_config_dir() -> Path:
    """``$PEERTRAIN_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/peertrain`` (``~/.config``)."""
    explicit = os.environ.get(CONFIG_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "peertrain"


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object saved at ``path``; ``{}`` when there is none (or no object)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_private_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` atomically, readable by the owner only (0600, folder 0700)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=2)
    os.chmod(tmp, 0o600)  # an existing tmp file keeps its old mode through O_CREAT
    os.replace(tmp, path)


def remember_api_url(api_url: str, config_dir: Path | None = None) -> None:
    """Make ``api_url`` the API that clients given none talk to (``peertrain login``)."""
    path = (config_dir or default_config_dir()) / SETTINGS_FILE
    write_private_json(path, read_json(path) | {"api": api_url.rstrip("/")})


def saved_api_url(config_dir: Path | None = None) -> str | None:
    """The API ``peertrain login`` logged in to last; else, for credentials saved before
    it remembered that, the one API that ``credentials.json`` holds tokens for."""
    folder = config_dir or default_config_dir()
    saved = read_json(folder / SETTINGS_FILE).get("api")
    if isinstance(saved, str) and saved:
        return saved.rstrip("/")
    apis = list(read_json(folder / CREDENTIALS_FILE))
    return apis[0] if len(apis) == 1 else None


def resolve_api_url(api_url: str | None = None, config_dir: Path | None = None) -> str:
    """``api_url``, else ``$PEERTRAIN_API``, else the API saved in ``config_dir`` by
    ``peertrain login`` (:func:`saved_api_url`), else the local gateway; no trailing
    slash."""
    found = api_url or os.environ.get(API_ENV) or saved_api_url(config_dir) or DEFAULT_API
    return found.rstrip("/")
