"""Local verification of RS256 access tokens with python-jose (algorithms pinned)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from jose import jwt

from peertrain.common.clock import SYSTEM_CLOCK, Clock

from .claims import (
    ACCESS_TOKEN_TYPE,
    ALGORITHMS,
    MAX_ACCESS_TTL_S,
    MAX_TOKEN_LENGTH,
    Principal,
)
from .disabled import DisabledUsers
from .errors import InvalidToken, UnknownSigningKey
from .keyset import KeySet

__all__ = ["TokenVerifier"]

_DECODE_OPTIONS: dict[str, Any] = {
    "verify_signature": True,
    "verify_aud": True,
    "verify_iat": True,
    # exp and nbf are checked against the verifier's own clock (``_principal``)
    "verify_exp": False,
    "verify_nbf": False,
    "verify_iss": True,
    "verify_sub": True,
    "verify_jti": True,
    "require_aud": True,
    "require_iat": True,
    "require_iss": True,
    "require_sub": True,
    "require_jti": True,
}


class TokenVerifier:
    """Check an access token and say who presented it.

    Checks, in order: size; header (``alg`` is RS256, ``typ`` is ``at+jwt``, ``kid``
    is a known key); signature; ``iss``, ``aud``, ``exp``, ``iat``, ``sub``, ``jti``
    present and valid (``exp``, ``nbf`` and ``iat`` on ``clock``); a lifetime of at
    most 15 minutes; ``roles`` a non-empty list; the subject (or a peer's owner) not
    disabled.

    Parameters
    ----------
    keys
        The trusted public keys.
    disabled
        Users whose tokens are refused even before they expire.
    issuer, audience
        Required ``iss`` and ``aud``.
    leeway_s
        Clock skew tolerated on ``exp``, ``nbf`` and ``iat``.
    clock
        Its wall-clock time judges ``exp``, ``nbf`` and ``iat`` (tests pass a
        :class:`~peertrain.common.clock.ManualClock`).
    """

    def __init__(
        self,
        keys: KeySet,
        disabled: DisabledUsers,
        *,
        issuer: str,
        audience: str,
        leeway_s: int = 30,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.keys = keys
        self.disabled = disabled
        self.issuer = issuer
        self.audience = audience
        self.leeway_s = leeway_s
        self.clock = clock
        self._options = {**_DECODE_OPTIONS, "leeway": leeway_s}

    def verify(self, token: str) -> Principal:
        """Return the token's principal.

        Raises
        ------
        UnknownSigningKey
            If the header names a key this process does not know.
        InvalidToken
            For every other reason the token is not acceptable.
        """
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH:
            raise InvalidToken("empty or oversized token")
        try:
            header = jwt.get_unverified_header(token)
        except Exception as exc:
            raise InvalidToken("malformed token") from exc
        if not isinstance(header, Mapping) or header.get("alg") not in ALGORITHMS:
            raise InvalidToken("algorithm not allowed")
        if header.get("typ") != ACCESS_TOKEN_TYPE:
            raise InvalidToken("not an access token")
        key = self.keys.get(header.get("kid"))
        if key is None:
            raise UnknownSigningKey("unknown signing key")
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=list(ALGORITHMS),
                audience=self.audience,
                issuer=self.issuer,
                options=self._options,
            )
        except Exception as exc:
            raise InvalidToken(f"rejected: {type(exc).__name__}") from exc
        principal = self._principal(claims)
        if self.disabled.refuses(principal):
            raise InvalidToken("account disabled")
        return principal

    def _principal(self, claims: Mapping[str, Any]) -> Principal:
        sub, jti, iat, exp, nbf = (claims.get(k) for k in ("sub", "jti", "iat", "exp", "nbf"))
        roles = claims.get("roles")
        if not (isinstance(sub, str) and sub and isinstance(jti, str) and jti):
            raise InvalidToken("missing subject or token id")
        if not (_is_int(iat) and _is_int(exp) and (nbf is None or _is_int(nbf))):
            raise InvalidToken("bad timestamps")
        now = self.clock.time()
        if exp < now - self.leeway_s:
            raise InvalidToken("expired")
        if nbf is not None and nbf > now + self.leeway_s:
            raise InvalidToken("not valid yet")
        if exp - iat > MAX_ACCESS_TTL_S or iat > now + self.leeway_s:
            raise InvalidToken("lifetime too long or issued in the future")
        if not (isinstance(roles, list) and roles and all(isinstance(r, str) for r in roles)):
            raise InvalidToken("bad roles")
        username, owner = claims.get("username"), claims.get("owner")
        return Principal(
            subject=sub,
            roles=frozenset(roles),
            token_id=jti,
            issued_at=iat,
            expires_at=exp,
            username=username if isinstance(username, str) else None,
            owner=owner if isinstance(owner, str) else None,
        )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
