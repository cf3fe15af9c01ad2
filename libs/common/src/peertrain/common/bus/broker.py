"""Building the FastStream RabbitMQ broker the way PeerTrain needs it.

FastStream's broker is the one AMQP client of services and peers. For the few calls it
has no method for (deleting a queue, fetching messages one by one with ``basic.get``),
:func:`broker_channel` lends the aio-pika channel of a short-lived FastStream broker's
own connection, rather than a second client's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from faststream.rabbit import Channel, RabbitBroker

if TYPE_CHECKING:
    from aio_pika import RobustChannel

__all__ = ["broker_channel", "make_broker"]


def make_broker(
    url: str, *, prefetch_count: int = 64, app_id: str = "peertrain", fail_fast: bool = True
) -> RabbitBroker:
    """A robust (auto-reconnecting) broker whose default channel has publisher confirms.

    Parameters
    ----------
    url
        ``amqp://user:pass@host:port/vhost``.
    prefetch_count
        Bounded prefetch for consumers on the default channel.
    app_id
        Set on every published message (the service name).
    fail_fast
        Raise at start-up if RabbitMQ is unreachable.

    Notes
    -----
    ``on_return_raises=True`` turns a mandatory publish that no queue accepts into an
    error instead of a silent drop; the outbox relay relies on it.

    ``apply_types=False``: handlers are not wrapped in FastDepends. Every PeerTrain
    handler takes the one decoded value (:mod:`.decoding`: the event, or the message
    itself); the dependency resolution cost more than the rest of a delivery (profiled).
    """
    return RabbitBroker(
        url,
        default_channel=Channel(
            prefetch_count=prefetch_count,
            publisher_confirms=True,
            on_return_raises=True,
        ),
        app_id=app_id,
        fail_fast=fail_fast,
        reconnect_interval=1.0,
        logger=None,
        apply_types=False,
    )


@asynccontextmanager
async def broker_channel(
    url: str, *, publisher_confirms: bool = False
) -> AsyncIterator[RobustChannel]:
    """The channel of a FastStream broker connected for the ``async with`` block.

    For what the broker has no call for (``queue.delete``, ``basic.get``); the broker
    is stopped (its connection closed) on the way out.
    """
    broker = RabbitBroker(
        url,
        default_channel=Channel(publisher_confirms=publisher_confirms),
        logger=None,
        apply_types=False,
    )
    await broker.connect()
    try:
        yield await broker.config.channel_manager.get_channel()
    finally:
        await broker.stop()
