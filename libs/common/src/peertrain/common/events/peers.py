"""Peer events: a peer machine's life from enrollment on."""

from __future__ import annotations

from pydantic import Field

from .catalogue import event_type
from .envelope import EventData

__all__ = ["PEER_ENROLLED", "PeerEnrolled", "peer_stream"]

PEER_ENROLLED = "peer.enrolled"


def peer_stream(peer_id: str) -> str:
    """The stream of one peer's events, ``peer:<id>``."""
    return f"peer:{peer_id}"


@event_type(PEER_ENROLLED)
class PeerEnrolled(EventData):
    """A peer runtime redeemed an enrollment token: it exists and belongs to ``owner_id``."""

    peer_id: str
    owner_id: str
    name: str = Field(min_length=1, max_length=64)
