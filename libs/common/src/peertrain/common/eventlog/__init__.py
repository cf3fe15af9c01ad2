"""The event log: append with optimistic concurrency, read streams and everything."""

from .log import ConcurrencyError, EventLog

__all__ = ["ConcurrencyError", "EventLog"]
