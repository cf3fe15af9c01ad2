"""Argon2id password hashing through pwdlib (CPU only; the shell runs it in threads)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from pwdlib import PasswordHash
from pwdlib.hashers.argon2 import Argon2Hasher

__all__ = ["Argon2Params", "PasswordHasher"]


@dataclass(frozen=True)
class Argon2Params:
    """Argon2id cost parameters.

    The defaults (t=2, m=32 MiB, p=1) exceed OWASP's minimum (t=2, m=19 MiB, p=1) and
    put a login at about 60-150 ms on a 2-core machine (``benchmarks/auth.py``).
    """

    time_cost: int = 2
    memory_kib: int = 32768
    parallelism: int = 1


class PasswordHasher:
    """Hash and verify passwords; verifying with no stored hash still costs one hash.

    Parameters
    ----------
    params
        Argon2id costs; hashes made with other costs still verify and are re-hashed.
    """

    def __init__(self, params: Argon2Params | None = None) -> None:
        self.params = params or Argon2Params()
        self._hash = PasswordHash(
            (
                Argon2Hasher(
                    time_cost=self.params.time_cost,
                    memory_cost=self.params.memory_kib,
                    parallelism=self.params.parallelism,
                ),
            )
        )
        # Verified against when the username is unknown, so that answer takes as long.
        self._dummy = self._hash.hash(secrets.token_urlsafe(24))

    def hash(self, password: str) -> str:
        """A new Argon2id hash of ``password`` (random salt)."""
        return self._hash.hash(password)

    def verify(self, password: str, stored: str | None) -> tuple[bool, str | None]:
        """Check ``password`` against ``stored``.

        Returns
        -------
        (bool, str or None)
            Whether it matches, and a new hash when the stored one used other costs.
            With ``stored=None`` a dummy hash is checked and the answer is ``False``.
        """
        if stored is None:
            self._hash.verify(password, self._dummy)
            return False, None
        return self._hash.verify_and_update(password, stored)
