"""The registry's typed errors (only ``api/`` turns them into HTTP answers)."""

from __future__ import annotations

from peertrain.common.errors import Forbidden, NotFound, PeerTrainError, QuotaExceeded
from peertrain.common.peers import NotEnoughPeers

__all__ = [
    "BrokerUnavailable",
    "NotEnoughPeers",
    "NotYourPeer",
    "PeerNotFound",
    "PeerQuotaExceeded",
    "RegistryError",
]


class RegistryError(PeerTrainError):
    """Root of the registry's errors."""


class PeerNotFound(RegistryError, NotFound):
    """No such peer, or not one the caller may see (the same answer, on purpose)."""

    code = "peer_not_found"


class NotYourPeer(RegistryError, Forbidden):
    """The caller may see the peer but not change it."""

    code = "not_your_peer"


class BrokerUnavailable(RegistryError, ConnectionError):
    """RabbitMQ's management API did not do what the registry asked."""

    status_code = 503
    code = "broker_unavailable"


class PeerQuotaExceeded(QuotaExceeded, RegistryError):
    """The peer's owner already has as many registered peers as one user may have."""
