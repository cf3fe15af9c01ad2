"""Diagnostic events: used by tests, benchmarks and operators to probe the pipeline."""

from __future__ import annotations

from .catalogue import event_type
from .envelope import EventData

__all__ = ["DIAGNOSTIC_PINGED", "DiagnosticPinged"]

DIAGNOSTIC_PINGED = "diagnostic.pinged"


@event_type(DIAGNOSTIC_PINGED)
class DiagnosticPinged(EventData):
    """A probe event: carries a counter and a free-form note."""

    n: int = 0
    note: str = ""
