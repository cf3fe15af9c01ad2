"""The service app factory, dependencies, health and the one error shape."""

from .application import (
    BrokerPublisher,
    MemoryPublisher,
    On,
    Ports,
    Published,
    Publisher,
    Table,
    deliver,
    handlers,
    subscribe,
)
from .context import ServiceContext
from .deps import ContextDep, ServiceUnavailable, application_dep, get_context
from .errors import error_body, error_response, install_error_handlers
from .factory import Setup, connect_context, create_app
from .paging import Page, Paging, PagingDep

__all__ = [
    "BrokerPublisher",
    "ContextDep",
    "MemoryPublisher",
    "On",
    "Page",
    "Paging",
    "PagingDep",
    "Ports",
    "Published",
    "Publisher",
    "ServiceContext",
    "ServiceUnavailable",
    "Setup",
    "Table",
    "application_dep",
    "connect_context",
    "create_app",
    "deliver",
    "error_body",
    "error_response",
    "get_context",
    "handlers",
    "install_error_handlers",
    "subscribe",
]
