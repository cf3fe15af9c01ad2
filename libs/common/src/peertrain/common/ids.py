"""Identifiers: UUIDv7 (time-ordered) as canonical strings."""

from __future__ import annotations

import uuid6

__all__ = ["new_id"]


def new_id() -> str:
    """Return a new UUIDv7 as a 36-character string (sortable by creation time)."""
    return str(uuid6.uuid7())
