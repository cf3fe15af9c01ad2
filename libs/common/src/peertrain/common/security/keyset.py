"""The public keys that verify access tokens, by ``kid``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog
from jose import jwk

from .claims import ALGORITHMS

__all__ = ["KeySet"]

log = structlog.get_logger(__name__)

_PUBLIC_MEMBERS = ("kty", "kid", "use", "alg", "n", "e")


class KeySet:
    """Public RSA keys by ``kid``, as learned from ``auth.keys_rotated`` events.

    Keys are parsed once, when the set is replaced, so verifying a token costs one
    dictionary look-up and one RSA signature check.
    """

    def __init__(self) -> None:
        self._keys: dict[str, Any] = {}
        self._jwks: tuple[dict[str, str], ...] = ()
        self.version = 0

    def replace(self, jwks: Iterable[Mapping[str, Any]], *, version: int = 0) -> None:
        """Make ``jwks`` the whole set (keys that are not RSA public keys are skipped).

        Parameters
        ----------
        jwks
            Public JWKs (``kty``, ``kid``, ``n``, ``e``); private members are ignored.
        version
            Where the set comes from (the event's ``seq`` in ``auth:keys``).
        """
        keys: dict[str, Any] = {}
        public: list[dict[str, str]] = []
        for raw in jwks:
            member = {k: str(raw[k]) for k in _PUBLIC_MEMBERS if k in raw}
            kid = member.get("kid")
            if not kid or member.get("kty") != "RSA" or member.get("alg", "RS256") != "RS256":
                log.warning("skipping a key that is not an RS256 public key", kid=kid)
                continue
            try:
                key = jwk.construct(member, ALGORITHMS[0])
            except Exception as exc:
                log.warning("skipping a malformed public key", kid=kid, error=repr(exc))
                continue
            keys[kid] = key
            public.append(member)
        self._keys = keys
        self._jwks = tuple(public)
        self.version = version

    def get(self, kid: object) -> Any | None:
        """The parsed key for ``kid``, or ``None``."""
        return self._keys.get(kid) if isinstance(kid, str) else None

    @property
    def kids(self) -> frozenset[str]:
        """The key ids currently trusted."""
        return frozenset(self._keys)

    def jwks(self) -> dict[str, list[dict[str, str]]]:
        """The set as a JWKS document (public members only)."""
        return {"keys": [dict(k) for k in self._jwks]}

    def __contains__(self, kid: object) -> bool:
        return self.get(kid) is not None

    def __len__(self) -> int:
        return len(self._keys)
