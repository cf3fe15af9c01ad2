"""Building the FastStream RabbitMQ broker the way PeerTrain needs it."""

from __future__ import annotations

from faststream.rabbit import Channel, RabbitBroker

__all__ = ["make_broker"]


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
    handler takes the one message and decodes it itself (:mod:`.subscription`); the
    dependency resolution cost more than the rest of a delivery (profiled).
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
