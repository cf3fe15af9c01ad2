"""RSA signing keys: generation, key ids (RFC 7638 thumbprints) and public JWKs."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from peertrain.common.events.auth import PublicJwk

__all__ = ["NewKey", "generate_key", "public_jwk", "retires_at", "thumbprint"]

KEY_BITS = 2048


def _b64(value: int) -> str:
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def thumbprint(n: str, e: str) -> str:
    """The RFC 7638 SHA-256 thumbprint of an RSA public key (used as its ``kid``)."""
    canonical = json.dumps({"e": e, "kty": "RSA", "n": n}, separators=(",", ":"))
    return (
        base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest())
        .rstrip(b"=")
        .decode("ascii")
    )


def public_jwk(key: rsa.RSAPrivateKey | rsa.RSAPublicKey) -> PublicJwk:
    """The public JWK of ``key`` (only ``n`` and ``e``, whatever is passed in)."""
    public = key.public_key() if isinstance(key, rsa.RSAPrivateKey) else key
    numbers = public.public_numbers()
    n, e = _b64(numbers.n), _b64(numbers.e)
    return PublicJwk(kid=thumbprint(n, e), n=n, e=e)


@dataclass(frozen=True)
class NewKey:
    """A freshly generated key: its private PEM and its public JWK."""

    private_pem: bytes
    jwk: PublicJwk

    @property
    def kid(self) -> str:
        """The key id."""
        return self.jwk.kid


def generate_key() -> NewKey:
    """A new 2048-bit RSA key (PKCS#8 PEM, unencrypted: protect the file, not the bytes)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return NewKey(private_pem=pem, jwk=public_jwk(private))


def retires_at(rotated_at: datetime, *, access_ttl_s: int, slack_s: float) -> datetime:
    """When a key replaced at ``rotated_at`` may leave the published set.

    The last token it signed expires ``access_ttl_s`` after the last signature, which
    can come up to ``slack_s`` late (instances caching the active key, clock skew).
    """
    return rotated_at + timedelta(seconds=access_ttl_s + slack_s)
