"""Decoding a delivery for its handler: FastStream decoders.

An event subscription's handler gets the typed
:class:`~peertrain.common.events.RecordedEvent`: :func:`event_decoder` decodes the body
once (FastStream caches it across retries) and rejects a body that is not a valid event,
so it lands in the queue's DLQ at once. A message subscription's handler (peer
telemetry: it reads the headers too) gets the message itself (:func:`the_message_itself`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
from faststream.exceptions import RejectMessage
from faststream.rabbit import RabbitMessage

from peertrain.common.events import MalformedEvent, RecordedEvent, UnknownEventType, decode_message
from peertrain.common.metrics import DEAD_LETTERED, EVENTS_CONSUMED

__all__ = ["event_decoder", "the_message_itself"]

log = structlog.get_logger(__name__)


def event_decoder(queue: str) -> Callable[[RabbitMessage], Awaitable[RecordedEvent]]:
    """The decoder of ``queue``'s events: a malformed one is rejected (dead-lettered)."""

    async def decode_event(message: RabbitMessage) -> RecordedEvent:
        try:
            return decode_message(message.body)
        except (MalformedEvent, UnknownEventType) as exc:
            EVENTS_CONSUMED.labels(queue=queue, outcome="rejected").inc()
            DEAD_LETTERED.labels(queue=queue).inc()
            log.error("rejecting malformed message", queue=queue, reason=str(exc))
            raise RejectMessage() from exc

    return decode_event


async def the_message_itself(message: RabbitMessage) -> RabbitMessage:
    """The handler gets the message, not a decoded body."""
    return message
