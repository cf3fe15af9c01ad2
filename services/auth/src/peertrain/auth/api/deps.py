"""Dependencies of auth's routes: the use-case context and the caller's address."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from peertrain.auth.usecases import AuthContext
from peertrain.common.app import extra
from peertrain.common.errors import ValidationFailed

__all__ = [
    "AUTH_EXTRA",
    "AuthDep",
    "ClientAddress",
    "client_address",
    "get_auth",
    "no_unknown_query",
]

AUTH_EXTRA = "auth"


get_auth = extra(AUTH_EXTRA, AuthContext, "auth is starting")

AuthDep = Annotated[AuthContext, Depends(get_auth)]


def _ip(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


def client_address(request: Request, auth: AuthDep) -> str:
    """The caller's address.

    ``X-Real-IP`` (or the last ``X-Forwarded-For`` hop) is believed only when the
    connection comes from a trusted proxy (the gateway); anyone else could forge it.
    """
    peer = request.client.host if request.client else ""
    if peer in auth.settings.trusted_proxies:
        forwarded = request.headers.get("x-forwarded-for", "").split(",")[-1]
        real = _ip(request.headers.get("x-real-ip")) or _ip(forwarded)
        if real:
            return real
    return _ip(peer) or peer or "unknown"


ClientAddress = Annotated[str, Depends(client_address)]


def no_unknown_query(request: Request) -> None:
    """Refuse query parameters the route does not declare (a typo must not pass silently)."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not request.query_params:
        return
    known = _query_names(route.dependant)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise ValidationFailed("unknown query parameters", detail=unknown)


def _query_names(dependant: Dependant) -> set[str]:
    names = {field.alias for field in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names
