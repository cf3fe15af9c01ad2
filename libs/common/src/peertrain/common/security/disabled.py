"""Principals whose tokens every service refuses before they expire: disabled users
(``user.disabled``) and removed peers (``peer.removed``)."""

from __future__ import annotations

from collections.abc import Iterable

from .claims import Principal

__all__ = ["DisabledUsers"]


class DisabledUsers:
    """Disabled user ids and removed peer ids; add-only (neither ever comes back).

    A user's tokens are refused, and so are the tokens of every peer the user owns; a
    removed peer's own tokens are refused.
    """

    def __init__(self, user_ids: Iterable[str] = (), peer_ids: Iterable[str] = ()) -> None:
        self._ids: set[str] = set(user_ids)
        self._peers: set[str] = set(peer_ids)

    def add(self, user_id: str) -> None:
        """Refuse ``user_id`` (and its peers) from now on."""
        self._ids.add(user_id)

    def update(self, user_ids: Iterable[str]) -> None:
        """Refuse every user in ``user_ids``."""
        self._ids.update(user_ids)

    def add_peer(self, peer_id: str) -> None:
        """Refuse the removed peer ``peer_id`` from now on."""
        self._peers.add(peer_id)

    def update_peers(self, peer_ids: Iterable[str]) -> None:
        """Refuse every removed peer in ``peer_ids``."""
        self._peers.update(peer_ids)

    def refuses(self, principal: Principal) -> bool:
        """Whether the principal, or the user owning a peer, is disabled, or the peer
        was removed."""
        if principal.is_peer and principal.subject in self._peers:
            return True
        return principal.subject in self._ids or (
            principal.owner is not None and principal.owner in self._ids
        )

    def removed(self, peer_id: object) -> bool:
        """Whether ``peer_id`` is a removed peer."""
        return peer_id in self._peers

    def __contains__(self, user_id: object) -> bool:
        return user_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)
