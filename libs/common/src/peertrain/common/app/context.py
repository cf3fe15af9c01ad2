"""What a running service holds: settings and its connections to the real stack."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from faststream.rabbit import RabbitBroker
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from peertrain.common.bus import OutboxRelay, Subscriptions
from peertrain.common.eventlog import EventLog
from peertrain.common.settings import ServiceSettings

if TYPE_CHECKING:
    from peertrain.common.blobs import BlobStore
    from peertrain.common.security import Security

__all__ = ["ServiceContext"]

Doc = dict[str, Any]


@dataclass
class ServiceContext:
    """A service's live resources, built by the app factory's lifespan.

    Attributes
    ----------
    log
        The shared event log (append + outbox).
    db
        The service's *own* database, for its read models and private state.
    subscriptions
        Event subscriptions; a service's ``setup`` hook adds to it before start-up.
    application
        The service's application object (set by its start-up hook; routes reach it
        through a typed dependency, :func:`~peertrain.common.app.application_dep`).
    security
        Token verification and peer checks (set by ``install_security``).
    """

    settings: ServiceSettings
    mongo: AsyncMongoClient[Doc]
    log: EventLog
    db: AsyncDatabase[Doc]
    broker: RabbitBroker
    blobs: BlobStore | None = None
    relay: OutboxRelay | None = None
    subscriptions: Subscriptions = field(default_factory=Subscriptions)
    on_shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    application: object | None = None
    security: Security | None = None
