"""User events (appended by the auth service)."""

from __future__ import annotations

from .catalogue import event_type
from .envelope import EventData

__all__ = ["USER_DISABLED", "USER_REGISTERED", "UserDisabled", "UserRegistered"]

USER_REGISTERED = "user.registered"
USER_DISABLED = "user.disabled"


@event_type(USER_REGISTERED)
class UserRegistered(EventData):
    """A new user account exists."""

    user_id: str
    username: str
    roles: tuple[str, ...] = ("user",)


@event_type(USER_DISABLED)
class UserDisabled(EventData):
    """A user may no longer act; every service refuses their tokens from now on."""

    user_id: str
    reason: str | None = None
