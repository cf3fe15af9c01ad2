"""The clock leases are judged by: the platform's one :class:`~peertrain.common.clock.Clock`
(tests pass one they move themselves)."""

from __future__ import annotations

from peertrain.common.clock import Clock

__all__ = ["LeaseClock"]

LeaseClock = Clock
"""Leases read time as everything else does (kept as a name for the leases package)."""
