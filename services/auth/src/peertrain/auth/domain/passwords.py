"""The password policy (OWASP ASVS 5.0, V6.2).

At least 12 characters, up to 256 accepted, no composition rules, and not one of the
most common breached passwords (a shipped list of 40,101, see ``data/NOTICE.md``), nor
the username itself.
"""

from __future__ import annotations

import gzip
from functools import cache
from importlib import resources

from .errors import WeakPassword

__all__ = ["MAX_LENGTH", "MIN_LENGTH", "PasswordPolicy", "common_passwords"]

MIN_LENGTH = 12
MAX_LENGTH = 256
_LIST = "common-passwords.txt.gz"


@cache
def common_passwords() -> frozenset[str]:
    """The shipped breached-password list (lower-case), loaded once."""
    blob = resources.files("peertrain.auth").joinpath("data", _LIST).read_bytes()
    text = gzip.decompress(blob).decode("utf-8")
    return frozenset(line for line in text.splitlines() if line)


class PasswordPolicy:
    """Decides whether a password may be set.

    Parameters
    ----------
    common
        Lower-case passwords to refuse (defaults to the shipped list).
    """

    def __init__(self, common: frozenset[str] | None = None) -> None:
        self.common = common_passwords() if common is None else common

    def problems(self, password: str, *, username: str | None = None) -> list[str]:
        """Every rule ``password`` breaks (empty when it is acceptable)."""
        found = []
        if len(password) < MIN_LENGTH:
            found.append(f"use at least {MIN_LENGTH} characters")
        if len(password) > MAX_LENGTH:
            found.append(f"use at most {MAX_LENGTH} characters")
        folded = password.strip().lower()
        if folded in self.common:
            found.append("this password is on a list of commonly breached passwords")
        if username and folded == username.strip().lower():
            found.append("the password must not be the username")
        return found

    def check(self, password: str, *, username: str | None = None) -> None:
        """Raise :class:`WeakPassword` listing every broken rule, if any."""
        problems = self.problems(password, username=username)
        if problems:
            raise WeakPassword(problems)
