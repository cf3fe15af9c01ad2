"""The handler a subscription runs for each decoded delivery, counted and logged.

An event's handler runs once per event id when the subscription has an
:class:`~.inbox.Inbox` (a duplicate is acknowledged with no second effect), with the
event's ids bound to the log context. Each outcome is counted
(``EVENTS_CONSUMED``: applied, duplicate, failed, rejected); a failure is logged and
raised on, for :class:`~.retry.RetryMiddleware` to decide what becomes of the message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
from faststream.exceptions import NackMessage, RejectMessage
from faststream.rabbit import RabbitMessage

from peertrain.common.eventlog import ConcurrencyError
from peertrain.common.events import RecordedEvent
from peertrain.common.faults import is_transient
from peertrain.common.metrics import DEAD_LETTERED, EVENTS_CONSUMED

from .inbox import Inbox

__all__ = ["EventHandler", "MessageHandler", "handle_events", "handle_messages"]

log = structlog.get_logger(__name__)

EventHandler = Callable[[RecordedEvent], Awaitable[None]]
MessageHandler = Callable[[RabbitMessage], Awaitable[None]]


def handle_events(
    queue: str,
    handler: EventHandler,
    inbox: Inbox | None,
    observe: Callable[[RecordedEvent], None] | None = None,
) -> EventHandler:
    """``handler`` for ``queue``'s events: observed, deduplicated, counted."""

    async def run(event: RecordedEvent) -> None:
        try:
            await handler(event)
        except Exception as exc:
            EVENTS_CONSUMED.labels(queue=queue, outcome="failed").inc()
            _log_failure(queue, exc)
            raise

    async def on_event(event: RecordedEvent) -> None:
        if observe is not None:
            observe(event)
        with structlog.contextvars.bound_contextvars(
            correlation_id=event.correlation_id, event_id=event.id, event_type=event.type
        ):
            if inbox is None:
                await run(event)
            elif not await inbox.once(event.id, lambda: run(event)):
                EVENTS_CONSUMED.labels(queue=queue, outcome="duplicate").inc()
                return
            EVENTS_CONSUMED.labels(queue=queue, outcome="applied").inc()

    return on_event


def handle_messages(queue: str, handler: MessageHandler) -> MessageHandler:
    """``handler`` for ``queue``'s raw messages, counted (``RejectMessage``: dead-lettered;
    ``NackMessage``: handed back to the queue, ``passed_on``)."""

    async def on_message(message: RabbitMessage) -> None:
        try:
            await handler(message)
        except RejectMessage:
            EVENTS_CONSUMED.labels(queue=queue, outcome="rejected").inc()
            DEAD_LETTERED.labels(queue=queue).inc()
            raise
        except NackMessage:  # handed back to the queue for another consumer: not a fault
            EVENTS_CONSUMED.labels(queue=queue, outcome="passed_on").inc()
            raise
        except Exception as exc:
            EVENTS_CONSUMED.labels(queue=queue, outcome="failed").inc()
            _log_failure(queue, exc)
            raise
        EVENTS_CONSUMED.labels(queue=queue, outcome="applied").inc()

    return on_message


def _log_failure(queue: str, exc: Exception) -> None:
    if is_transient(exc):
        log.warning("a dependency is away; the message waits", queue=queue, error=repr(exc)[:300])
    elif isinstance(exc, ConcurrencyError):  # lost every retry to other appends: contention
        log.warning("the stream kept moving; the message is tried again", queue=queue, why=str(exc))
    else:
        log.exception("handler failed", queue=queue)
