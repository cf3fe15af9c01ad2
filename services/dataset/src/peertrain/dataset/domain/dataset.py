"""The dataset aggregate: its state, folded from the ``dataset:<id>`` stream."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from peertrain.common.events import RecordedEvent
from peertrain.common.events.datasets import (
    DatasetDeleted,
    DatasetRejected,
    DatasetUploaded,
    DatasetValidated,
)

__all__ = ["DatasetState", "Status", "apply", "fold", "raw_prefix", "schema_key"]

Status = Literal["validating", "validated", "rejected", "deleted"]


def raw_prefix(dataset_id: str) -> str:
    """Every object of a dataset lives under ``datasets/<id>/``."""
    return f"datasets/{dataset_id}/"


def schema_key(dataset_id: str) -> str:
    """Where a validated dataset's full schema is kept (JSON list of columns)."""
    return f"{raw_prefix(dataset_id)}schema.json"


@dataclass(frozen=True)
class DatasetState:
    """Where a dataset stands.

    Attributes
    ----------
    version
        The ``seq`` of the last event folded (the expected version of the next append).
    """

    dataset_id: str
    owner_id: str
    status: Status
    version: int
    uploaded: DatasetUploaded
    validated: DatasetValidated | None = None
    rejected: DatasetRejected | None = None

    def visible_to(self, user_id: str) -> bool:
        """Whether ``user_id`` may see it (the owner, while it exists)."""
        return self.owner_id == user_id and self.status != "deleted"


def apply(state: DatasetState | None, event: RecordedEvent) -> DatasetState | None:
    """Fold one event of the dataset's stream (None until it is uploaded)."""
    data = event.data
    if isinstance(data, DatasetUploaded):
        return DatasetState(data.dataset_id, data.owner_id, "validating", event.seq, uploaded=data)
    if state is None:
        return None
    if isinstance(data, DatasetValidated):
        return replace(state, status="validated", validated=data, version=event.seq)
    if isinstance(data, DatasetRejected):
        return replace(state, status="rejected", rejected=data, version=event.seq)
    if isinstance(data, DatasetDeleted):
        return replace(state, status="deleted", version=event.seq)
    return replace(state, version=event.seq)


def fold(events: Sequence[RecordedEvent]) -> DatasetState | None:
    """The state after ``events`` (one dataset's stream, in order); None if not uploaded."""
    state: DatasetState | None = None
    for event in events:
        state = apply(state, event)
    return state
