"""FastAPI dependencies as ``Annotated`` aliases, shared by every service's routes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Request

from peertrain.common.errors import PeerTrainError

from .context import ServiceContext

__all__ = ["ContextDep", "ServiceUnavailable", "application_dep", "get_context"]


T = TypeVar("T")


class ServiceUnavailable(PeerTrainError):
    """The service is starting or stopping."""

    status_code = 503
    code = "unavailable"


def get_context(request: Request) -> ServiceContext:
    """The running service's context."""
    ctx: ServiceContext | None = getattr(request.app.state, "ctx", None)
    if ctx is None:
        raise ServiceUnavailable("service is not ready")
    return ctx


ContextDep = Annotated[ServiceContext, Depends(get_context)]


def application_dep(
    kind: type[T], starting: str, *, ready: Callable[[T], bool] | None = None
) -> Callable[[ServiceContext], T]:
    """A dependency answering the service's application (of ``kind``), or 503 with
    ``starting`` while it is not there yet (or, given ``ready``, not ready)::

        get_auth = application_dep(AuthApp, "auth is starting")
        AuthDep = Annotated[AuthApp, Depends(get_auth)]
    """

    def get(ctx: ContextDep) -> T:
        found = ctx.application
        if not isinstance(found, kind) or (ready is not None and not ready(found)):
            raise ServiceUnavailable(starting)
        return found

    return get
