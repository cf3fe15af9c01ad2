"""The runtime's files: identity and broker credentials (secrets, mode 0600) and the
status a running runtime leaves for ``peertrain-peer status``.

Every write goes to a temporary file in the same directory, created with mode 0600,
then renamed over the old one: a reader never sees half a file, and a secret is never
readable by others, not even for a moment.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import ConfigError

__all__ = [
    "BROKER_FILE",
    "IDENTITY_FILE",
    "STATUS_FILE",
    "ConfigError",
    "read_model",
    "remove",
    "write_json",
]

IDENTITY_FILE = "identity.json"
BROKER_FILE = "broker.json"
STATUS_FILE = "status.json"

M = TypeVar("M", bound=BaseModel)


def _ensure_dir(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)


def write_json(directory: Path, name: str, data: Any) -> Path:
    """Write ``data`` as JSON to ``directory/name`` atomically, mode 0600."""
    _ensure_dir(directory)
    path = directory / name
    tmp = directory / f".{name}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, default=str)
            f.write("\n")
        os.chmod(tmp, 0o600)  # the umask may have taken bits away, never added
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def read_model(directory: Path, name: str, model: type[M], *, secret: bool = True) -> M | None:
    """Read ``directory/name`` as ``model``; ``None`` if the file does not exist.

    Raises
    ------
    ConfigError
        If the file is unreadable, invalid, or (``secret``) readable by others.
    """
    path = directory / name
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    if secret and os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{path} is accessible by other users; run: chmod 600 {path}")
    try:
        return model.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise ConfigError(f"{path} is not valid: {exc}".splitlines()[0]) from exc


def remove(directory: Path, name: str) -> None:
    """Delete ``directory/name`` if it exists."""
    (directory / name).unlink(missing_ok=True)
