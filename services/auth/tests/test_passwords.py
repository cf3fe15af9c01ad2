"""The password policy (OWASP ASVS 5.0 V6.2) and Argon2id hashing."""

from __future__ import annotations

import pytest

from peertrain.auth.domain.accounts import canonical_username, validate_username
from peertrain.auth.domain.errors import InvalidUsername, WeakPassword
from peertrain.auth.domain.hashing import Argon2Params, PasswordHasher
from peertrain.auth.domain.passwords import MAX_LENGTH, MIN_LENGTH, PasswordPolicy, common_passwords

FAST = Argon2Params(time_cost=1, memory_kib=8192, parallelism=1)


def test_the_shipped_list_is_a_real_common_password_list() -> None:
    common = common_passwords()
    assert len(common) > 40_000
    assert {"123456", "password", "qwerty", "password1234", "1q2w3e4r5t6y"} <= common
    assert all(p == p.lower() for p in common)


@pytest.mark.parametrize(
    "password",
    [
        "correct horse battery staple",
        "a" * MIN_LENGTH + "zq",  # no composition rules: one class of characters is fine
        "x7" * 64,  # 128 characters
        "é" * MAX_LENGTH,  # up to 256 characters, any Unicode
    ],
)
def test_acceptable_passwords(password: str) -> None:
    assert PasswordPolicy().problems(password, username="ada") == []


@pytest.mark.parametrize(
    ("password", "why"),
    [
        ("short pass", "at least 12"),
        ("x" * (MAX_LENGTH + 1), "at most"),
        ("password1234", "breached"),
        ("PASSWORD1234", "breached"),  # compared case-insensitively
        ("1q2w3e4r5t6y", "breached"),
        ("ada.lovelace.1815", "username"),
    ],
)
def test_refused_passwords(password: str, why: str) -> None:
    with pytest.raises(WeakPassword) as err:
        PasswordPolicy().check(password, username="ada.lovelace.1815")
    assert any(why in p for p in err.value.problems)
    assert err.value.status_code == 422


def test_every_broken_rule_is_listed() -> None:
    policy = PasswordPolicy(frozenset({"qwerty"}))
    assert len(policy.problems("qwerty", username="qwerty")) == 3


def test_usernames_are_canonical_and_validated() -> None:
    assert canonical_username("  Ada ") == "ada"
    assert validate_username("Ada_L-1.x") == "ada_l-1.x"
    for bad in ("ab", "-ada", "ada lovelace", "a" * 33, "ädä"):
        with pytest.raises(InvalidUsername):
            validate_username(bad)


def test_argon2id_hash_and_verify() -> None:
    hasher = PasswordHasher(FAST)
    stored = hasher.hash("correct horse battery staple")
    assert stored.startswith("$argon2id$v=19$m=8192,t=1,p=1$")
    assert hasher.verify("correct horse battery staple", stored) == (True, None)
    assert hasher.verify("wrong horse battery staple", stored) == (False, None)
    assert hasher.hash("same") != hasher.hash("same")  # salted


def test_unknown_user_still_costs_a_verification() -> None:
    hasher = PasswordHasher(FAST)
    assert hasher.verify("anything at all", None) == (False, None)


def test_hashes_with_old_costs_verify_and_are_rehashed() -> None:
    old = PasswordHasher(FAST).hash("correct horse battery staple")
    new = PasswordHasher(Argon2Params(time_cost=2, memory_kib=8192, parallelism=1))
    ok, rehashed = new.verify("correct horse battery staple", old)
    assert ok and rehashed is not None and "t=2" in rehashed
