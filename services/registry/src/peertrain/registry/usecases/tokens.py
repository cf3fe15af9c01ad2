"""Verified peer tokens, remembered: one RSA check per token, not per heartbeat.

A peer signs every heartbeat with the same access token for up to 15 minutes. The
first sight of a token costs a full verification; later ones a dictionary look-up and
the checks that can change while a token lives: its expiry, its owner being
disabled, and the trusted key set (any change of it re-verifies every token).

Refused tokens are remembered too (a replayed bad token costs a look-up, not an RSA
check), except those naming an unknown key, which a key rotation may make good.
:meth:`TokenCache.cached` answers from memory only, so the hot path can decide what
an unknown token may cost before paying for it.
"""

from __future__ import annotations

from peertrain.common.clock import SYSTEM_CLOCK, Clock
from peertrain.common.security import InvalidToken, Principal, Security, UnknownSigningKey

__all__ = ["TokenCache"]


class TokenCache:
    """Verify tokens through ``security``, remembering the good ones.

    Parameters
    ----------
    security
        The service's token verification state.
    max_size
        Tokens remembered at most (the cache is cleared when full; 0 disables it).
    clock
        Token lifetimes are judged by its wall-clock time.
    """

    def __init__(
        self,
        security: Security,
        *,
        max_size: int = 200_000,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.security = security
        self.max_size = max_size
        self.clock = clock
        self._known: dict[str, tuple[Principal, int]] = {}
        self._refused: dict[str, int] = {}
        self.hits = 0
        self.misses = 0

    def cached(self, token: str) -> Principal | None:
        """The principal of a token verified before and still good; ``None`` when only
        a full verification can tell (never any I/O or cryptography).

        Raises
        ------
        InvalidToken
            If the token was refused before (with the same trusted keys).
        """
        security = self.security
        version = security.keys.version
        known = self._known.get(token)
        if known is not None:
            principal, seen_version = known
            if (
                seen_version == version
                and self.clock.time() <= principal.expires_at + security.settings.leeway_s
                and not security.disabled.refuses(principal)
            ):
                self.hits += 1
                return principal
            del self._known[token]
            return None
        if self._refused.get(token) == version:
            raise InvalidToken("refused before")
        return None

    def verify(self, token: str) -> Principal:
        """The token's principal, without I/O.

        Raises
        ------
        UnknownSigningKey
            If the token names a key this process does not know (yet).
        InvalidToken
            For every other reason it is refused.
        """
        principal = self.cached(token)
        if principal is not None:
            return principal
        security = self.security
        version = security.keys.version
        self.misses += 1
        try:
            principal = security.verify(token)
        except UnknownSigningKey:
            raise
        except InvalidToken:
            if self.max_size:
                if len(self._refused) >= self.max_size:
                    self._refused.clear()
                self._refused[token] = version
            raise
        if self.max_size:
            if len(self._known) >= self.max_size:
                self._known.clear()
            self._known[token] = (principal, version)
        return principal

    async def authenticate(self, token: str) -> Principal:
        """Like :meth:`verify`; an unknown key id re-reads the log once (rate-limited)."""
        try:
            return self.verify(token)
        except UnknownSigningKey:
            if not await self.security.refresh_if_stale():
                raise
            return self.verify(token)

    def __len__(self) -> int:
        return len(self._known)
