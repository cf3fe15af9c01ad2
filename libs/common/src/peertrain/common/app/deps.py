"""FastAPI dependencies as ``Annotated`` aliases, shared by every service's routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from peertrain.common.blobs import BlobStore
from peertrain.common.errors import PeerTrainError
from peertrain.common.eventlog import EventLog
from peertrain.common.settings import ServiceSettings

from .context import ServiceContext

__all__ = ["BlobsDep", "ContextDep", "EventLogDep", "SettingsDep", "get_context"]


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


def get_log(ctx: Annotated[ServiceContext, Depends(get_context)]) -> EventLog:
    """The event log."""
    return ctx.log


def get_blobs(ctx: Annotated[ServiceContext, Depends(get_context)]) -> BlobStore:
    """The blob store."""
    if ctx.blobs is None:
        raise ServiceUnavailable("this service has no blob store")
    return ctx.blobs


def get_settings(ctx: Annotated[ServiceContext, Depends(get_context)]) -> ServiceSettings:
    """The service's settings."""
    return ctx.settings


ContextDep = Annotated[ServiceContext, Depends(get_context)]
EventLogDep = Annotated[EventLog, Depends(get_log)]
BlobsDep = Annotated[BlobStore, Depends(get_blobs)]
SettingsDep = Annotated[ServiceSettings, Depends(get_settings)]
