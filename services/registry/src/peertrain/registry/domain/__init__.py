"""The registry's pure core: the peer aggregate, liveness and selection rules."""

from .errors import BrokerUnavailable, NotEnoughPeers, NotYourPeer, PeerNotFound, RegistryError
from .liveness import Liveness, LivenessTracker, Status, Transition, TransitionKind
from .peer import PeerRecord, apply
from .selection import PeerFilters, PeerView, Prefer, choose, matches, visible_to

__all__ = [
    "BrokerUnavailable",
    "Liveness",
    "LivenessTracker",
    "NotEnoughPeers",
    "NotYourPeer",
    "PeerFilters",
    "PeerNotFound",
    "PeerRecord",
    "PeerView",
    "Prefer",
    "RegistryError",
    "Status",
    "Transition",
    "TransitionKind",
    "apply",
    "choose",
    "matches",
    "visible_to",
]
