"""The event log: append with optimistic concurrency, read streams and everything; the
aggregate repository every service loads, decides and appends through."""

from .cache import Cached, LruCache, StateCache
from .fold import VERSION_ONLY, Fold, Loaded, Saved
from .loader import Loader, Observed, StreamStore
from .log import ConcurrencyError, EventLog
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
    "LruCache",
    "Observed",
    "Repository",
    "Saved",
    "StateCache",
    "StreamStore",
]
