"""Throttling's pure core: fixed windows, slot ids, the order slots are tried in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from peertrain.auth.domain.errors import TooManyAttempts
from peertrain.auth.domain.throttle import Limit, Limits, probe_order, slot_id

LIMITS = Limits.of(
    login_max_failures=5,
    login_max_failures_per_address=20,
    login_window_s=900,
    register_max_per_address=10,
    register_window_s=3600,
)


def test_windows_are_fixed_and_aligned_on_the_epoch() -> None:
    limit = LIMITS.login_user
    start = datetime(2026, 12, 1, 19, 15, tzinfo=UTC)  # a multiple of 900 s
    first = limit.window(start)
    assert first.ends_at == start + timedelta(seconds=900)
    assert limit.window(start + timedelta(seconds=899.999)) == first
    following = limit.window(start + timedelta(seconds=900))
    assert following.index == first.index + 1
    assert following.ends_at == first.ends_at + timedelta(seconds=900)


def test_retry_after_counts_whole_seconds_to_the_end_of_the_window() -> None:
    window = LIMITS.register.window(datetime(2026, 12, 1, 19, 0, tzinfo=UTC))
    assert window.retry_after_s(window.ends_at - timedelta(seconds=3600)) == 3600
    assert window.retry_after_s(window.ends_at - timedelta(seconds=1.2)) == 2
    assert window.retry_after_s(window.ends_at) == 1  # never 0: the answer says "wait"


def test_keys_separate_limits_and_parts() -> None:
    user, address = LIMITS.login_user, LIMITS.login_address
    assert user.key("ada", "203.0.113.1") == user.key("ada", "203.0.113.1")
    assert user.key("ada", "203.0.113.1") != user.key("ada", "203.0.113.2")
    assert user.key("ada", "203.0.113.1") != user.key("ada\x00203.0.113", "1")
    assert address.key("203.0.113.1") != LIMITS.register.key("203.0.113.1")
    assert len(user.key("x" * 300, "203.0.113.1")) == 64


def test_slot_ids_differ_by_window_and_slot() -> None:
    ids = {slot_id("k", w, n) for w in (1, 2) for n in range(5)}
    assert len(ids) == 10


@pytest.mark.parametrize(
    ("taken", "order"),
    [(0, [0, 1, 2, 3, 4]), (3, [3, 4, 0, 1, 2]), (5, [0, 1, 2, 3, 4]), (9, [0, 1, 2, 3, 4])],
)
def test_every_slot_is_tried_once_starting_from_the_guess(taken: int, order: list[int]) -> None:
    assert list(probe_order(5, taken)) == order


def test_a_limit_needs_at_least_one_attempt_and_second() -> None:
    with pytest.raises(ValueError, match="login_user"):
        Limit("login_user", 0, 900, "failed logins")


def test_the_refusal_says_what_and_when() -> None:
    error = TooManyAttempts(42, LIMITS.register.what)
    assert error.status_code == 429 and error.code == "too_many_requests"
    assert str(error) == "too many registrations; try again later"
    assert error.headers == {"Retry-After": "42"} and error.detail == {"retry_after_s": 42}
