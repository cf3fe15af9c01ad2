"""The event envelope and the typed catalogue, one module per event family.

Importing this package registers every family, so the catalogue is complete.
"""

from . import auth, datasets, diagnostics, models, peers, tasks, training, users, weights
from .catalogue import UnknownEventType, catalogue, event_type, payload_model
from .codec import MalformedEvent, decode_message, from_document, to_document, to_message
from .envelope import EventData, NewEvent, RawData, RecordedEvent

__all__ = [
    "EventData",
    "MalformedEvent",
    "NewEvent",
    "RawData",
    "RecordedEvent",
    "UnknownEventType",
    "auth",
    "catalogue",
    "datasets",
    "decode_message",
    "diagnostics",
    "event_type",
    "from_document",
    "models",
    "payload_model",
    "peers",
    "tasks",
    "to_document",
    "to_message",
    "training",
    "users",
    "weights",
]
