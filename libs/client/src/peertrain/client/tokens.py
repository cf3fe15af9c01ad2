"""Credentials: an access token, the refresh token that renews it, and where they live.

The refresh token rotates: every refresh spends it and answers a new pair, so a store
must save the new pair at once (presenting a spent refresh token revokes the session).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = ["FileTokenStore", "MemoryTokenStore", "TokenStore", "Tokens", "default_config_dir"]

CONFIG_DIR_ENV = "PEERTRAIN_CONFIG_DIR"
_CREDENTIALS = "credentials.json"


@dataclass(frozen=True)
class Tokens:
    """A user's tokens.

    Parameters
    ----------
    access_token
        Sent as ``Authorization: Bearer``.
    refresh_token
        Traded for a new pair once the access token expired; ``None`` when unknown.
    expires_at
        Unix time when the access token expires (0: unknown).
    username
        Who logged in (shown by the CLI only).
    """

    access_token: str
    refresh_token: str | None = None
    expires_at: float = 0.0
    username: str | None = None

    @classmethod
    def from_pair(cls, body: dict[str, Any], username: str | None = None) -> Tokens:
        """From the API's token pair (``access_token``, ``refresh_token``, ``expires_in``)."""
        expires_in = body.get("expires_in")
        expires_at = time.time() + float(expires_in) if expires_in else 0.0
        return cls(str(body["access_token"]), body.get("refresh_token"), expires_at, username)

    def expiring(self, margin_s: float = 30.0) -> bool:
        """Whether the access token is known to expire within ``margin_s``."""
        return bool(self.expires_at) and time.time() + margin_s >= self.expires_at


class TokenStore(Protocol):
    """Where a client keeps its tokens between runs."""

    def load(self) -> Tokens | None:
        """The saved tokens, or ``None``."""
        ...

    def save(self, tokens: Tokens | None) -> None:
        """Replace the saved tokens (``None`` forgets them)."""
        ...


class MemoryTokenStore:
    """Tokens kept for the life of the process."""

    def __init__(self, tokens: Tokens | None = None) -> None:
        self.tokens = tokens

    def load(self) -> Tokens | None:
        """The tokens held."""
        return self.tokens

    def save(self, tokens: Tokens | None) -> None:
        """Hold these tokens."""
        self.tokens = tokens


def default_config_dir() -> Path:
    """``$PEERTRAIN_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/peertrain`` (``~/.config``)."""
    explicit = os.environ.get(CONFIG_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "peertrain"


class FileTokenStore:
    """Tokens in ``<config dir>/credentials.json`` (mode 0600), one entry per API URL.

    Parameters
    ----------
    api_url
        The API the tokens belong to (tokens of one deployment mean nothing to another).
    config_dir
        Default: :func:`default_config_dir`.
    """

    def __init__(self, api_url: str, config_dir: Path | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        self.path = (config_dir or default_config_dir()) / _CREDENTIALS

    def _read_all(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def load(self) -> Tokens | None:
        """The tokens saved for this API URL."""
        entry = self._read_all().get(self.api_url)
        if not isinstance(entry, dict) or not entry.get("access_token"):
            return None
        fields = Tokens.__dataclass_fields__
        return Tokens(**{k: v for k, v in entry.items() if k in fields})

    def save(self, tokens: Tokens | None) -> None:
        """Write atomically, readable by the owner only (0600, folder 0700)."""
        data = self._read_all()
        if tokens is None:
            data.pop(self.api_url, None)
        else:
            data[self.api_url] = asdict(tokens)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
        os.chmod(tmp, 0o600)  # an existing tmp file keeps its old mode through O_CREAT
        os.replace(tmp, self.path)
