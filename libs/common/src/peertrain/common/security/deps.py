"""FastAPI dependencies: who is calling, as ``Annotated`` aliases.

Usage in a route::

    @router.get("/jobs")
    async def list_jobs(user: CurrentUser) -> ...: ...

    @router.post("/admin/thing", dependencies=[Depends(require_role(ROLE_ADMIN))])
    async def thing() -> ...: ...

A missing or invalid token answers 401 (with ``WWW-Authenticate``), a valid token
without the needed role 403, both in the platform's one error shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from peertrain.common.app.deps import ServiceUnavailable

from .claims import ROLE_ADMIN, Principal
from .errors import InsufficientRole, InvalidToken
from .state import Security

__all__ = [
    "AdminUser",
    "CurrentPeer",
    "CurrentPrincipal",
    "CurrentUser",
    "SecurityDep",
    "get_principal",
    "get_security",
    "require_role",
]

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="An access token from POST /api/auth/token (or /api/auth/peers/token).",
)


def get_security(request: Request) -> Security:
    """The running service's security state (see :func:`install_security`)."""
    ctx = getattr(request.app.state, "ctx", None)
    security = ctx.security if ctx is not None else None
    if not isinstance(security, Security):
        raise ServiceUnavailable("token verification is not ready")
    return security


SecurityDep = Annotated[Security, Depends(get_security)]


async def get_principal(
    security: SecurityDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The caller, from ``Authorization: Bearer <access token>``."""
    if credentials is None:
        raise InvalidToken("no bearer token")
    return await security.authenticate(credentials.credentials)


CurrentPrincipal = Annotated[Principal, Depends(get_principal)]


def get_user(principal: CurrentPrincipal) -> Principal:
    """The calling user (a person); a peer's token is refused with 403."""
    if not principal.is_user:
        raise InsufficientRole("this action is for users, not peers")
    return principal


def get_peer(principal: CurrentPrincipal) -> Principal:
    """The calling peer runtime; a user's token is refused with 403."""
    if not principal.is_peer:
        raise InsufficientRole("this action is for peers")
    return principal


def require_role(*roles: str) -> Callable[[Principal], Principal]:
    """A dependency that lets through principals holding any of ``roles`` (else 403).

    Use it with ``Depends(require_role("admin"))``, or through an alias such as
    :data:`AdminUser`.
    """
    if not roles:
        raise ValueError("require_role needs at least one role")

    def check(principal: CurrentPrincipal) -> Principal:
        if not principal.has_role(*roles):
            raise InsufficientRole(f"this action needs the role {' or '.join(roles)}")
        return principal

    check.__name__ = f"require_{'_or_'.join(roles)}"
    return check


CurrentUser = Annotated[Principal, Depends(get_user)]
CurrentPeer = Annotated[Principal, Depends(get_peer)]
AdminUser = Annotated[Principal, Depends(require_role(ROLE_ADMIN))]
