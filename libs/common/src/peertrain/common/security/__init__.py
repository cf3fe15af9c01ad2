"""Token verification shared by every service.

Auth signs RS256 access tokens; every other service verifies them locally against the
public keys it learns from ``auth.keys_rotated`` events (and from the log at start-up),
and refuses users disabled by ``user.disabled`` events. A service calls
``await install_security(ctx)`` from its setup hook, then uses the ``Annotated``
dependencies in its routes and :func:`verify_message` in its subscribers.
"""

import importlib
from typing import TYPE_CHECKING, Any

from .claims import (
    ACCESS_TOKEN_TYPE,
    ALGORITHMS,
    DEFAULT_AUDIENCE,
    DEFAULT_ISSUER,
    MAX_ACCESS_TTL_S,
    ROLE_ADMIN,
    ROLE_PEER,
    ROLE_USER,
    Principal,
)
from .disabled import DisabledUsers
from .errors import InsufficientRole, InvalidToken, UnknownSigningKey
from .messages import TOKEN_HEADER, peer_headers, token_from_headers, verify_message

if TYPE_CHECKING:
    from .deps import *  # noqa: F403
    from .install import *  # noqa: F403
    from .keyset import *  # noqa: F403
    from .settings import *  # noqa: F403
    from .state import *  # noqa: F403
    from .telemetry import *  # noqa: F403
    from .verifier import *  # noqa: F403

# The service side (settings, key set, verifier, the security state over the event log,
# FastAPI dependencies, installing security into a service, the peer message handler)
# imports pydantic-settings, python-jose, PyMongo, FastAPI and FastStream: packages of
# peertrain-common's ``service`` extra, which a peer does not install. A peer needs only
# ``peer_headers``, so those modules load on first use of a name they export, lightest
# first: a peer starts 0.8 CPU-s sooner and imports none of them.
_SERVICE_SIDE = ("settings", "keyset", "verifier", "state", "deps", "install", "telemetry")


def __getattr__(name: str) -> Any:
    for module in _SERVICE_SIDE:
        found = importlib.import_module(f".{module}", __name__)
        if name in found.__all__:
            value = getattr(found, name)
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ACCESS_TOKEN_TYPE",
    "ALGORITHMS",
    "DEFAULT_AUDIENCE",
    "DEFAULT_ISSUER",
    "MAX_ACCESS_TTL_S",
    "ROLE_ADMIN",
    "ROLE_PEER",
    "ROLE_USER",
    "SECURITY_EVENT_TYPES",
    "TOKEN_HEADER",
    "AdminUser",
    "CurrentPeer",
    "CurrentPrincipal",
    "CurrentUser",
    "DisabledUsers",
    "InsufficientRole",
    "InvalidToken",
    "KeySet",
    "PassOn",
    "PeerMessage",
    "Principal",
    "Security",
    "SecurityDep",
    "SecuritySettings",
    "TokenVerifier",
    "UnknownSigningKey",
    "get_principal",
    "get_security",
    "install_security",
    "peer_headers",
    "peer_message_handler",
    "refuse",
    "require_role",
    "security_queue",
    "token_from_headers",
    "verify_message",
]
