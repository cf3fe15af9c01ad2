"""Tokens carried in message headers: peers sign their telemetry with their token.

A peer runtime publishes with ``headers=peer_headers(access_token)``; the consumer
calls :func:`verify_message` with the peer id taken from the routing key, and only
then acts on the message. A refused message is an ack/reject decision for the
subscriber (never a retry: a bad token does not get better).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .claims import ROLE_PEER, Principal
from .errors import InsufficientRole, InvalidToken

if TYPE_CHECKING:
    # The service side's state (event log, key set): a peer imports this module for
    # :func:`peer_headers` alone.
    from .state import Security

__all__ = ["TOKEN_HEADER", "peer_headers", "token_from_headers", "verify_message"]

TOKEN_HEADER = "authorization"  # noqa: S105 (a header name, not a secret)
"""Message header holding ``Bearer <access token>``."""


def peer_headers(access_token: str) -> dict[str, str]:
    """Headers that carry ``access_token`` on a message."""
    return {TOKEN_HEADER: f"Bearer {access_token}"}


def token_from_headers(headers: Mapping[str, Any] | None) -> str:
    """The bearer token in ``headers``.

    Raises
    ------
    InvalidToken
        If there is none.
    """
    value = (headers or {}).get(TOKEN_HEADER)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        raise InvalidToken("no token header")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise InvalidToken("not a bearer token")
    return token.strip()


async def verify_message(
    security: Security,
    headers: Mapping[str, Any] | None,
    *,
    peer_id: str | None = None,
    role: str = ROLE_PEER,
) -> Principal:
    """Verify the token on a message and that it belongs to the expected sender.

    Parameters
    ----------
    security
        The process's security state.
    headers
        The message headers.
    peer_id
        The peer the message claims to come from (e.g. from ``peer.<id>.heartbeat``):
        the token's subject must be that peer.
    role
        The role the sender must hold (``peer`` by default).

    Raises
    ------
    InvalidToken
        If the token is missing or not valid.
    InsufficientRole
        If it is valid but not the sender's, or lacks ``role``.
    """
    principal = await security.authenticate(token_from_headers(headers))
    if not principal.has_role(role):
        raise InsufficientRole(f"the sender must hold the role {role}")
    if peer_id is not None and principal.subject != peer_id:
        raise InsufficientRole("the token belongs to another peer")
    return principal
