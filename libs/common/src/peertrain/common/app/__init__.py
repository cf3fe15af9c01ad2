"""The service app factory, dependencies, health and the one error shape."""

from .context import ServiceContext
from .deps import ContextDep, ServiceUnavailable, extra, get_context
from .errors import error_body, error_response, install_error_handlers
from .factory import Setup, connect_context, create_app
from .paging import Page, Paging, PagingDep

__all__ = [
    "ContextDep",
    "Page",
    "Paging",
    "PagingDep",
    "ServiceContext",
    "ServiceUnavailable",
    "Setup",
    "connect_context",
    "create_app",
    "error_body",
    "error_response",
    "extra",
    "get_context",
    "install_error_handlers",
]
