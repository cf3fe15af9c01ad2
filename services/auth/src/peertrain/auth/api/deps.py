"""Dependencies of auth's routes: the application and the caller's address."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from peertrain.auth.application import AuthApp
from peertrain.common.app import application_dep
from peertrain.common.errors import ValidationFailed

__all__ = [
    "AuthDep",
    "ClientAddress",
    "client_address",
    "get_auth",
    "no_unknown_query",
]

get_auth = application_dep(AuthApp, "auth is starting")

AuthDep = Annotated[AuthApp, Depends(get_auth)]


def client_address(request: Request, auth: AuthDep) -> str:
    """The caller's address.

    ``X-Forwarded-For`` (or ``X-Real-IP``) is believed only from the trusted proxies
    (``trusted_proxies``: the gateway, an ingress); anyone else could forge it.
    """
    return auth.settings.proxies.client(
        request.client.host if request.client else None,
        forwarded_for=",".join(request.headers.getlist("x-forwarded-for")),
        real_ip=request.headers.get("x-real-ip"),
    )


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
