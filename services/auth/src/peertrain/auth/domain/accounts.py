"""Usernames and roles."""

from __future__ import annotations

import re

from peertrain.common.security import ROLE_ADMIN, ROLE_USER

from .errors import InvalidUsername

__all__ = ["ADMIN_ROLES", "USER_ROLES", "canonical_username", "could_exist", "validate_username"]

USER_ROLES: tuple[str, ...] = (ROLE_USER,)
ADMIN_ROLES: tuple[str, ...] = (ROLE_USER, ROLE_ADMIN)

_USERNAME = re.compile(r"^[a-z0-9][a-z0-9._-]{2,31}$")
_MAX_LOGIN_NAME = 256


def canonical_username(raw: str) -> str:
    """The form a username is stored and looked up in (trimmed, lower-case).

    Lenient on purpose: a login with any name is looked up (and answered like any
    other failure), so it never says whether a name is well-formed.
    """
    return raw.strip().lower()[:_MAX_LOGIN_NAME]


def could_exist(name: str) -> bool:
    """Whether a canonical username could belong to an account (passes the rules).

    Login skips the lookup for one that cannot: it fails like any unknown name, and
    text the store cannot hold (a NUL character, refused by PostgreSQL under FerretDB)
    never reaches a query.
    """
    return _USERNAME.match(name) is not None


def validate_username(raw: str) -> str:
    """The canonical username for a new account.

    Raises
    ------
    InvalidUsername
        Unless it is 3-32 characters of ``a-z 0-9 . _ -`` starting with a letter or digit.
    """
    name = canonical_username(raw)
    if not _USERNAME.match(name):
        raise InvalidUsername(
            "a username is 3 to 32 characters: letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name
