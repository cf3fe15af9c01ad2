"""Users whose tokens every service refuses (learned from ``user.disabled``)."""

from __future__ import annotations

from collections.abc import Iterable

from .claims import Principal

__all__ = ["DisabledUsers"]


class DisabledUsers:
    """A set of disabled user ids; add-only (an account is never re-enabled)."""

    def __init__(self, user_ids: Iterable[str] = ()) -> None:
        self._ids: set[str] = set(user_ids)

    def add(self, user_id: str) -> None:
        """Refuse ``user_id`` from now on."""
        self._ids.add(user_id)

    def update(self, user_ids: Iterable[str]) -> None:
        """Refuse every id in ``user_ids``."""
        self._ids.update(user_ids)

    def refuses(self, principal: Principal) -> bool:
        """Whether the principal, or the user owning a peer, is disabled."""
        return principal.subject in self._ids or (
            principal.owner is not None and principal.owner in self._ids
        )

    def __contains__(self, user_id: object) -> bool:
        return user_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)
