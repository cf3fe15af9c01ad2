"""The one serializer for events: Mongo documents and AMQP bodies.

Nobody outside this module turns raw documents or message bodies into events.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from peertrain.common.errors import PeerTrainError

from .catalogue import UnknownEventType, payload_model
from .envelope import EventData, RawData, RecordedEvent

__all__ = ["MalformedEvent", "decode_message", "from_document", "to_document", "to_message"]


class MalformedEvent(PeerTrainError, ValueError):
    """A body or document that is not a valid event envelope or payload."""

    status_code = 400
    code = "malformed_event"


def _payload(type_: str, data: Any, *, strict: bool) -> EventData | RawData:
    try:
        model = payload_model(type_)
    except UnknownEventType:
        if strict:
            raise
        return RawData.model_validate(data)
    return model.model_validate(data)


def to_document(event: RecordedEvent) -> dict[str, Any]:
    """Event -> the log's stored document (``_id`` is the event id)."""
    return {
        "_id": event.id,
        "type": event.type,
        "stream": event.stream,
        "seq": event.seq,
        "position": event.position,
        "occurred_at": event.occurred_at,
        "producer": event.producer,
        "actor": event.actor,
        "correlation_id": event.correlation_id,
        "causation_id": event.causation_id,
        "schema": event.schema_version,
        "data": event.payload_dict(),
    }


def from_document(doc: dict[str, Any]) -> RecordedEvent:
    """Stored document -> event (unknown types keep their data as :class:`RawData`)."""
    occurred = doc["occurred_at"]
    if isinstance(occurred, datetime) and occurred.tzinfo is None:
        occurred = occurred.replace(tzinfo=UTC)  # BSON dates come back naive, in UTC
    return RecordedEvent(
        id=doc["_id"],
        type=doc["type"],
        stream=doc["stream"],
        seq=doc["seq"],
        position=doc["position"],
        occurred_at=occurred,
        producer=doc["producer"],
        actor=doc.get("actor"),
        correlation_id=doc.get("correlation_id"),
        causation_id=doc.get("causation_id"),
        schema_version=doc.get("schema", 1),
        data=_payload(doc["type"], doc.get("data") or {}, strict=False),
    )


def to_message(event: RecordedEvent) -> bytes:
    """Event -> AMQP body (JSON)."""
    body = event.model_dump(mode="json", exclude={"data", "schema_version"})
    body["schema"] = event.schema_version
    body["data"] = event.payload_dict()
    return json.dumps(body, separators=(",", ":")).encode()


def decode_message(body: bytes | str | dict[str, Any]) -> RecordedEvent:
    """AMQP body -> typed event.

    Raises
    ------
    MalformedEvent
        If the body is not JSON, not an envelope, or its payload fails validation.
    UnknownEventType
        If the event type is not in the catalogue.
    """
    try:
        raw = json.loads(body) if isinstance(body, bytes | str) else dict(body)
        if not isinstance(raw, dict):
            raise MalformedEvent("event body is not a JSON object")
        type_ = raw.get("type")
        if not isinstance(type_, str):
            raise MalformedEvent("event has no type")
        data = _payload(type_, raw.get("data"), strict=True)
        fields = {k: v for k, v in raw.items() if k not in {"data", "schema"}}
        return RecordedEvent(**fields, schema_version=raw.get("schema", 1), data=data)
    except (ValueError, TypeError, ValidationError) as exc:
        if isinstance(exc, MalformedEvent | UnknownEventType):
            raise
        raise MalformedEvent(f"malformed event: {exc}".splitlines()[0]) from exc
