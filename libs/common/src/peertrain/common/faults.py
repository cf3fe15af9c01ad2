"""Telling a passing fault (a store or broker that blinked) from a failure that repeats.

Consumers retry a message whose handler failed. A bug or a poison message fails the
same way every time, so it is dead-lettered after the queue's delivery limit. An outage
of the event store, the bucket or the broker fails *every* message until it ends, so a
handler that meets one keeps its message and waits with backoff (see
:mod:`peertrain.common.bus.retry`): dead-lettering during an outage would strand
facts that nothing drives again.
"""

from __future__ import annotations

from aiormq.exceptions import AMQPConnectionError, ChannelInvalidStateError
from pymongo.errors import ConnectionFailure, OperationFailure

__all__ = ["is_transient"]

_FERRETDB_BACKEND_DOWN = ("failed to connect", "connection refused", "dial tcp", "broken pipe")
"""FerretDB answers ``InternalError`` (code 1) with these when PostgreSQL is away."""


def _transient_one(exc: BaseException) -> bool:
    if isinstance(
        exc,
        ConnectionFailure
        | ConnectionError
        | TimeoutError
        | AMQPConnectionError
        | ChannelInvalidStateError,
    ):
        return True
    if isinstance(exc, OperationFailure):
        text = str(exc).lower()
        return exc.code == 1 and any(s in text for s in _FERRETDB_BACKEND_DOWN)
    # botocore's connection-level errors (botocore is not a dependency of every service)
    return f"{type(exc).__module__}.{type(exc).__qualname__}" in (
        "botocore.exceptions.EndpointConnectionError",
        "botocore.exceptions.ConnectionClosedError",
        "botocore.exceptions.ReadTimeoutError",
        "botocore.exceptions.ConnectTimeoutError",
    )


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says an infrastructure dependency is away."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if _transient_one(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
