"""The event log: append with optimistic concurrency, read streams and everything; the
aggregate repository every service loads, decides and appends through; the same log in
memory (:class:`MemoryEventLog`) for one process."""

from .cache import Cached, LruCache, StateCache
from .fold import VERSION_ONLY, Fold, Loaded, Saved
from .loader import Loader, Observed, StreamStore
from .log import ConcurrencyError, EventLog
from .memory import MemoryEventLog
from .repository import Decide, Repository

__all__ = [
    "VERSION_ONLY",
    "Cached",
    "ConcurrencyError",
    "Decide",
    "EventLog",
    "Fold",
    "Loaded",
    "Loader",
    "LogPort",
    "LruCache",
    "MemoryEventLog",
    "Observed",
    "Repository",
    "Saved",
    "StateCache",
    "StreamStore",
]

LogPort = EventLog | MemoryEventLog
"""The event log an application appends to and reads: MongoDB (FerretDB), or in memory."""
