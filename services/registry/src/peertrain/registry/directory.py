"""The registry's read model in memory: one :class:`PeerRecord` per peer.

Every query is answered from here (a dictionary look-up or a scan of a few thousand
small records), never from MongoDB: on FerretDB every query scans its collection. The
``peers`` collection is this directory's durable copy (see :mod:`.projection`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import Enum

from peertrain.common.events import RecordedEvent

from .domain.peer import PeerRecord, apply

__all__ = ["Applied", "Directory"]


class Applied(Enum):
    """What :meth:`Directory.apply` did with an event."""

    APPLIED = "applied"
    DUPLICATE = "duplicate"
    GAP = "gap"
    """The event is ahead of what the directory knows: read the stream first."""


def _peer_id(stream: str) -> str | None:
    kind, _, peer_id = stream.partition(":")
    return peer_id if kind == "peer" and peer_id else None


class Directory:
    """Peer records by id, folded from the peer streams, with what changed since a flush."""

    def __init__(self, records: Iterable[PeerRecord] = (), *, position: int = 0) -> None:
        self._records: dict[str, PeerRecord] = {r.peer_id: r for r in records}
        self.position = position
        """The largest log position folded in."""
        self._dirty: set[str] = set()

    def get(self, peer_id: str) -> PeerRecord | None:
        """The record of ``peer_id``, if any event of it was folded."""
        return self._records.get(peer_id)

    def apply(self, event: RecordedEvent, *, strict: bool = True) -> Applied:
        """Fold ``event`` if it is the next one of its stream.

        With ``strict=False`` (replaying the whole log in order) a gap in ``seq`` is
        accepted: events of types not replayed may sit in between.
        """
        peer_id = _peer_id(event.stream)
        if peer_id is None:
            return Applied.DUPLICATE
        current = self._records.get(peer_id) or PeerRecord(peer_id=peer_id)
        if event.seq <= current.version:
            return Applied.DUPLICATE
        if strict and event.seq != current.version + 1:
            return Applied.GAP
        self._records[peer_id] = apply(current, event)
        self.position = max(self.position, event.position)
        self._dirty.add(peer_id)
        return Applied.APPLIED

    def put(self, record: PeerRecord) -> None:
        """Keep ``record``, folded elsewhere (the repository), unless it is not newer."""
        current = self._records.get(record.peer_id)
        if current is not None and current.version >= record.version:
            return
        self._records[record.peer_id] = record
        self.position = max(self.position, record.position)
        self._dirty.add(record.peer_id)

    def take_dirty(self) -> list[PeerRecord]:
        """The records changed since the last call (and forget that they were)."""
        dirty, self._dirty = self._dirty, set()
        return [self._records[p] for p in dirty if p in self._records]

    def mark_dirty(self, records: Iterable[PeerRecord]) -> None:
        """Put records back for the next flush (a write failed)."""
        self._dirty.update(r.peer_id for r in records)

    def replace_with(self, other: Directory) -> None:
        """Take ``other``'s records and position (after a replay)."""
        self._records = dict(other._records)
        self.position = other.position
        self._dirty = set()

    def records(self) -> Iterator[PeerRecord]:
        """Every record."""
        return iter(list(self._records.values()))

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, peer_id: object) -> bool:
        return peer_id in self._records
