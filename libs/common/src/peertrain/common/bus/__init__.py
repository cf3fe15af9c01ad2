"""The bus: broker, topology (exchanges, quorum queues, dead letters), relay, consumers."""

from .broker import make_broker
from .handling import EventHandler, MessageHandler
from .inbox import Inbox
from .relay import OutboxRelay
from .subscription import Subscription, Subscriptions
from .topology import (
    DLX,
    EVENTS,
    PEERS,
    TELEMETRY,
    declare_exchanges,
    declare_queue,
    dlq_name,
    quorum_queue,
    retire_queues,
)

__all__ = [
    "DLX",
    "EVENTS",
    "PEERS",
    "TELEMETRY",
    "EventHandler",
    "Inbox",
    "MessageHandler",
    "OutboxRelay",
    "Subscription",
    "Subscriptions",
    "declare_exchanges",
    "declare_queue",
    "dlq_name",
    "make_broker",
    "quorum_queue",
    "retire_queues",
]
