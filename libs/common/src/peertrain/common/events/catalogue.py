"""The event catalogue: every event type name mapped to its typed payload model.

The catalogue is the contract between services. Each family module registers its
payloads with :func:`event_type`; consumers look payloads up with :func:`payload_model`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from peertrain.common.errors import PeerTrainError

from .envelope import EventData

__all__ = ["UnknownEventType", "catalogue", "event_type", "payload_model"]

_CATALOGUE: dict[str, type[EventData]] = {}

D = TypeVar("D", bound=type[EventData])


class UnknownEventType(PeerTrainError, LookupError):
    """An event type that is not in the catalogue."""

    code = "unknown_event_type"


def event_type(name: str, *, schema: int = 1) -> Callable[[D], D]:
    """Register a payload model under the event type ``name`` (past tense, ``job.created``)."""

    def register(cls: D) -> D:
        if name in _CATALOGUE and _CATALOGUE[name] is not cls:
            raise ValueError(f"event type {name!r} is registered twice")
        cls.event_type = name
        cls.schema_version = schema
        _CATALOGUE[name] = cls
        return cls

    return register


def payload_model(name: str) -> type[EventData]:
    """Return the payload model registered for ``name``.

    Raises
    ------
    UnknownEventType
        If no family module registered it.
    """
    try:
        return _CATALOGUE[name]
    except KeyError:
        raise UnknownEventType(f"unknown event type {name!r}") from None


def catalogue() -> dict[str, type[EventData]]:
    """A copy of the whole catalogue (event type -> payload model)."""
    return dict(_CATALOGUE)
