"""Auth's read of its own events: the disabled flag on accounts.

``user.disabled`` in the log is the truth; the ``disabled`` flag on a user document
and the revocation of that user's sessions follow from it. The disable route applies
them at once; the subscriber applies them again on delivery (idempotently), and
:func:`replay_disabled` rebuilds them from the log at start-up, so a crash between the
append and the local writes leaves nothing behind.
"""

from __future__ import annotations

from peertrain.common.events.users import USER_DISABLED, UserDisabled

from .usecases import AuthContext
from .usecases.accounts import apply_disabled

__all__ = ["replay_disabled"]


async def replay_disabled(auth: AuthContext) -> int:
    """Apply every ``user.disabled`` in the log to the accounts here."""
    count = 0
    async for event in auth.log.read_all(types=[USER_DISABLED]):
        if isinstance(event.data, UserDisabled) and await auth.users.get(event.data.user_id):
            await apply_disabled(auth, event.data.user_id)
            count += 1
    return count
