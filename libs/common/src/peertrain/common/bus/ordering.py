"""In-order handling: a channel's deliveries reach their handler one at a time, in order.

The channel prefetches a window of messages (:data:`~.subscription.PIPELINE`) and the
client runs every delivery in its own task; :class:`InOrder` makes each task wait until
its predecessor on the channel has been handled. :class:`InOrderMiddleware` is that
wait as a FastStream middleware, around everything else a delivery does (retries
included); the acknowledgement comes after it, as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import structlog
from faststream import BaseMiddleware, ContextRepo
from faststream._internal.basic_types import AsyncFuncAny
from faststream.message import StreamMessage

__all__ = ["STALL_S", "InOrder", "InOrderMiddleware"]

log = structlog.get_logger(__name__)

STALL_S = 30.0
"""How long a delivery waits for a predecessor that never reached its handler."""


@dataclass
class _Line:
    next: int = 1
    running: bool = False
    waiting: dict[int, asyncio.Event] = field(default_factory=dict)


class InOrder:
    """Handle a channel's deliveries one at a time, in delivery-tag order.

    RabbitMQ numbers a channel's deliveries 1, 2, 3, ... (a new channel after a
    reconnect starts again at 1), and the client handles each in a task of its own,
    which may reach the handler in another order. A delivery waits here until the one
    before it on its channel has been handled; a finished delivery wakes only its
    successor (waking every waiter cost a task per prefetched message for each message
    handled). Should a predecessor never arrive (it cannot, short of a bug in the
    client), the line moves on after :data:`STALL_S`.
    """

    def __init__(self) -> None:
        self._lines: dict[int, _Line] = {}

    @asynccontextmanager
    async def turn(self, channel: object, tag: int) -> AsyncIterator[None]:
        """Wait for every earlier delivery of ``channel``; hold the line meanwhile."""
        line = self._lines.setdefault(id(channel), _Line())
        while line.next < tag:
            wake = line.waiting.setdefault(tag, asyncio.Event())
            try:
                await asyncio.wait_for(wake.wait(), STALL_S)
            except TimeoutError:
                if not line.running and min(line.waiting) == tag:
                    log.warning("a delivery never reached its handler", missing=line.next)
                    line.next = tag
        line.waiting.pop(tag, None)
        line.running = True
        try:
            yield
        finally:
            line.next = max(line.next, tag + 1)
            line.running = False
            successor = line.waiting.get(line.next)
            if successor is not None:
                successor.set()


class InOrderMiddleware(BaseMiddleware):
    """A subscription's deliveries in turn (its :class:`InOrder` given per subscription)."""

    def __init__(self, msg: Any, /, *, context: ContextRepo, order: InOrder) -> None:
        super().__init__(msg, context=context)
        self.order = order

    async def consume_scope(self, call_next: AsyncFuncAny, msg: StreamMessage[Any]) -> Any:
        """Wait for the delivery's turn on its channel, then hand it on."""
        raw = msg.raw_message
        tag = raw.delivery_tag or 0
        # A delivery without a tag (FastStream's test broker) has no line to wait in.
        async with self.order.turn(raw.channel if tag else None, tag):
            return await call_next(msg)
