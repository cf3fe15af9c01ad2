"""Credentials: an access token, the refresh token that renews it, and where they live.

The refresh token rotates: every refresh spends it and answers a new pair, so a store
must save the new pair at once (presenting a spent refresh token revokes the session).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from .config import (
    CONFIG_DIR_ENV,
    CREDENTIALS_FILE,
    default_config_dir,
    read_json,
    resolve_api_url,
    write_private_json,
)

__all__ = [
    "CONFIG_DIR_ENV",
    "FileTokenStore",
    "MemoryTokenStore",
    "TokenStore",
    "Tokens",
    "default_config_dir",
]


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


class FileTokenStore:
    """Tokens in ``<config dir>/credentials.json`` (mode 0600), one entry per API URL:
    the file ``peertrain login`` writes, so the SDK and the CLI share one session.

    Parameters
    ----------
    config_dir
        The config folder (default: :func:`default_config_dir`), as the CLI's
        ``--config-dir``.
    api_url
        The API whose tokens these are (tokens of one deployment mean nothing to
        another). Default: the one a client given this store talks to; until one is
        given it, the API resolved as a client would (:func:`resolve_api_url`: the API
        ``peertrain login`` logged in to last, with this folder).

    Examples
    --------
    >>> Client(token_store=FileTokenStore(default_config_dir()))  # doctest: +SKIP
    """

    def __init__(self, config_dir: Path | str | None = None, *, api_url: str | None = None) -> None:
        if isinstance(config_dir, str) and "://" in config_dir:
            raise ValueError(
                f"FileTokenStore takes a config folder, not an API URL ({config_dir!r}):"
                " FileTokenStore(config_dir, api_url=...)"
            )
        self.config_dir = Path(config_dir).expanduser() if config_dir else default_config_dir()
        self.path = self.config_dir / CREDENTIALS_FILE
        self.api_url = resolve_api_url(api_url, self.config_dir)
        self.bound = api_url is not None
        """Whether ``api_url`` was given (else a client binds the store to its own API)."""

    def for_api(self, api_url: str) -> FileTokenStore:
        """The same file, for the tokens of ``api_url``."""
        return FileTokenStore(self.config_dir, api_url=api_url)

    def load(self) -> Tokens | None:
        """The tokens saved for this API URL."""
        entry = read_json(self.path).get(self.api_url)
        if not isinstance(entry, dict) or not entry.get("access_token"):
            return None
        fields = Tokens.__dataclass_fields__
        return Tokens(**{k: v for k, v in entry.items() if k in fields})

    def save(self, tokens: Tokens | None) -> None:
        """Write atomically, readable by the owner only (0600, folder 0700)."""
        data = read_json(self.path)
        if tokens is None:
            data.pop(self.api_url, None)
        else:
            data[self.api_url] = asdict(tokens)
        write_private_json(self.path, data)
