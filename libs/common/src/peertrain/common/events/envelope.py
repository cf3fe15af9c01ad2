"""The event envelope: one pydantic model for every event in PeerTrain.

An event is created as a :class:`NewEvent` (no position yet) and becomes a
:class:`RecordedEvent` once the :class:`~peertrain.common.eventlog.EventLog` has given it
its ``stream`` and ``seq`` (and a global ``position``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

from peertrain.common.ids import new_id

__all__ = ["EventData", "NewEvent", "RawData", "RecordedEvent"]


class EventData(BaseModel):
    """Base of every typed event payload.

    Subclasses are registered in the catalogue with :func:`~.catalogue.event_type`,
    which sets ``event_type`` and ``schema_version``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_type: ClassVar[str] = ""
    schema_version: ClassVar[int] = 1


class RawData(BaseModel):
    """Payload of an event whose type this process does not know (forward compatible)."""

    model_config = ConfigDict(frozen=True, extra="allow")


def _now() -> datetime:
    return datetime.now(UTC)


class NewEvent(BaseModel):
    """An event about to be appended: everything but its place in the log.

    Use :meth:`of` to build one from a typed payload.
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_id)
    type: str
    occurred_at: datetime = Field(default_factory=_now)
    producer: str
    actor: str | None = None
    correlation_id: str | None = None
    causation_id: str | None = None
    schema_version: int = 1
    data: SerializeAsAny[EventData] | RawData

    @classmethod
    def of(
        cls,
        data: EventData,
        *,
        producer: str,
        actor: str | None = None,
        correlation_id: str | None = None,
        causation: RecordedEvent | None = None,
        event_id: str | None = None,
    ) -> NewEvent:
        """Wrap a typed payload; ``causation`` carries its id and correlation forward."""
        if not data.event_type:
            raise TypeError(f"{type(data).__name__} is not registered in the catalogue")
        corr = correlation_id or (causation.correlation_id if causation else None)
        return cls(
            id=event_id or new_id(),
            type=data.event_type,
            producer=producer,
            actor=actor,
            correlation_id=corr,
            causation_id=causation.id if causation else None,
            schema_version=data.schema_version,
            data=data,
        )

    def stored_as(self, stream: str, seq: int, position: int) -> RecordedEvent:
        """This event as a log records it at ``seq`` of ``stream``, ``position`` overall
        (in-memory logs and tests; the real log reads it back from its document)."""
        fields = self.model_dump(exclude={"data"})
        return RecordedEvent(**fields, data=self.data, stream=stream, seq=seq, position=position)


class RecordedEvent(NewEvent):
    """An event as stored in the log and carried on the bus.

    Attributes
    ----------
    stream
        ``<aggregate>:<id>``, e.g. ``job:0193...``.
    seq
        Position in its stream, from 1, contiguous.
    position
        Global position in the whole log (increasing; may have gaps).
    """

    stream: str
    seq: int = Field(ge=1)
    position: int = Field(ge=0)

    def payload_dict(self) -> dict[str, Any]:
        """The payload as plain JSON-able data."""
        return self.data.model_dump(mode="json")
