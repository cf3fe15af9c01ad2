"""Accounts: registration, the bootstrapped admin, disabling.

``user.disabled`` in the log is the truth; the ``disabled`` flag on a user document
and the revocation of that user's sessions follow from it (:func:`apply_disabled`). The
disable route applies them at once; the audit subscription applies them again on
delivery (idempotently), and :func:`replay_disabled` rebuilds them from the log at
start-up, so a crash between the append and the local writes leaves nothing behind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from peertrain.auth.domain.accounts import ADMIN_ROLES, USER_ROLES, validate_username
from peertrain.auth.domain.errors import UsernameTaken
from peertrain.auth.store import UserRecord
from peertrain.common.errors import Conflict, NotFound
from peertrain.common.events.users import USER_DISABLED, UserDisabled, UserRegistered
from peertrain.common.ids import new_id

from .throttling import admit

if TYPE_CHECKING:
    from peertrain.auth.application import AuthApp

__all__ = [
    "apply_disabled",
    "bootstrap_admin",
    "disable_user",
    "record_pending",
    "register",
    "replay_disabled",
    "user_stream",
]

log = structlog.get_logger(__name__)


def user_stream(user_id: str) -> str:
    """The stream of one user's events."""
    return f"user:{user_id}"


async def _create(
    auth: AuthApp, username: str, password_hash: str, roles: tuple[str, ...], actor: str | None
) -> UserRecord:
    user = UserRecord(
        id=new_id(),
        username=username,
        password_hash=password_hash,
        roles=roles,
        created_at=auth.now(),
    )
    event_id = new_id()
    await auth.users.insert(user, event_id=event_id)
    await _record_registered(auth, user, event_id, actor=actor or user.id)
    return user


async def _record_registered(auth: AuthApp, user: UserRecord, event_id: str, *, actor: str) -> None:
    """``user.registered`` as the stream's first event (again: the same event, stored
    once); a stream that has other events already is left as it is."""
    data = UserRegistered(user_id=user.id, username=user.username, roles=user.roles)
    event = auth.event(data, actor=actor, event_id=event_id)
    await auth.streams.execute(
        user_stream(user.id), lambda version: [] if version else [event], new=True
    )
    await auth.users.event_recorded(user.id)


async def register(auth: AuthApp, username: str, password: str, *, address: str) -> UserRecord:
    """Create a user account and append ``user.registered``.

    A valid request takes a slot of the per-address registration limit before the
    name is looked up and the password hashed (a taken name counts too).

    Raises
    ------
    InvalidUsername, WeakPassword
        If the name or the password breaks the rules (422).
    TooManyAttempts
        When this address used up its registrations for now (429).
    UsernameTaken
        If the name is taken (409).
    """
    name = validate_username(username)
    auth.policy.check(password, username=name)
    await admit(auth, auth.limits.register, address)
    if await auth.users.by_username(name) is not None:
        raise UsernameTaken(f"the username {name!r} is taken")
    password_hash = await auth.hash_password(password)
    return await _create(auth, name, password_hash, USER_ROLES, actor=None)


async def bootstrap_admin(auth: AuthApp) -> UserRecord:
    """Make sure the admin account from the environment exists, with that password.

    Outside development mode the password must also meet the policy (the service
    refuses to start otherwise, see ``AuthSettings.startup_problems``).
    """
    settings = auth.settings
    name = validate_username(settings.admin_username)
    password = settings.admin_password.get_secret_value()
    if not password:
        raise ValueError("the admin password is empty")
    if settings.environment != "development":
        auth.policy.check(password, username=name)
    user = await auth.users.by_username(name)
    if user is None:
        user = await _create(auth, name, await auth.hash_password(password), ADMIN_ROLES, None)
        log.info("admin account created", username=name, user_id=user.id)
        return user
    ok, _ = await auth.verify_password(password, user.password_hash)
    if not ok:
        await auth.users.set_password_hash(user.id, await auth.hash_password(password))
        log.info("admin password set from the environment", username=name)
    if set(ADMIN_ROLES) - set(user.roles):
        await auth.users.set_roles(user.id, ADMIN_ROLES)
    return await auth.users.get(user.id) or user


async def record_pending(auth: AuthApp) -> int:
    """Append the ``user.registered`` events a crash may have left out (idempotent)."""
    pending = await auth.users.pending()
    for user, event_id in pending:
        await _record_registered(auth, user, event_id, actor=user.id)
    return len(pending)


async def disable_user(
    auth: AuthApp, user_id: str, *, actor: str, reason: str | None
) -> UserRecord:
    """Disable an account: ``user.disabled``, sessions revoked, tokens refused everywhere.

    Idempotent: disabling a disabled account changes nothing.

    Raises
    ------
    NotFound
        If there is no such user.
    Conflict
        If an admin tries to disable their own account.
    """
    user = await auth.users.get(user_id)
    if user is None:
        raise NotFound("no such user")
    if user.id == actor:
        raise Conflict("you cannot disable your own account")
    if not user.disabled:
        event = auth.event(UserDisabled(user_id=user.id, reason=reason), actor=actor)
        await auth.streams.execute(user_stream(user.id), lambda _: [event], retries=2, refresh=True)
    await apply_disabled(auth, user.id)
    return await auth.users.get(user.id) or user


async def apply_disabled(auth: AuthApp, user_id: str) -> None:
    """The local effects of ``user.disabled`` (idempotent; also run by the subscriber)."""
    auth.security.disabled.add(user_id)
    await auth.users.mark_disabled(user_id)
    await auth.sessions.revoke_user(user_id, now=auth.now(), reason="user disabled")


async def replay_disabled(auth: AuthApp) -> int:
    """Apply every ``user.disabled`` in the log to the accounts here (start-up)."""
    count = 0
    async for event in auth.log.read_all(types=[USER_DISABLED]):
        if isinstance(event.data, UserDisabled) and await auth.users.get(event.data.user_id):
            await apply_disabled(auth, event.data.user_id)
            count += 1
    return count
