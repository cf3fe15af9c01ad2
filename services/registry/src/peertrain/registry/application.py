"""The registry as one application object, transport-free, and what it listens to.

:class:`RegistryApp` holds the registry's ports (the event log and the clock; it sends
nothing to peers), its settings and its working memory: the peer directory (the read
model every query is answered from), liveness (:class:`Presence`), the token cache and
the telemetry gate's rate limits. The platform (:mod:`peertrain.registry.app`), the
unit tests and any simulation drive the same methods:

* :meth:`RegistryApp.on_event`: ``peer.*`` and ``user.disabled`` events, bound by
  :data:`REGISTRY_SUBSCRIPTIONS`;
* :meth:`RegistryApp.on_heartbeat` and :meth:`RegistryApp.on_peer`: peers' telemetry
  (heartbeats; announce and leaving), from the registry's own telemetry consumer
  (:mod:`peertrain.registry.subscribers`): a heartbeat must cost next to nothing, so it
  does not go through the per-message verification of the services' peer queues;
* :meth:`RegistryApp.tick`: the timers, once;
* the commands and queries of :mod:`peertrain.registry.usecases`, which take the app.
"""

from __future__ import annotations

from typing import Protocol

from peertrain.common.app import On, Ports, Table
from peertrain.common.clock import Clock
from peertrain.common.events import RecordedEvent
from peertrain.common.events.peers import PEER_EVENT_TYPES
from peertrain.common.events.users import USER_DISABLED, UserDisabled
from peertrain.common.security import Security

from .config import RegistrySettings
from .directory import PeerDirectory, Projector
from .domain.liveness import LivenessTracker
from .domain.peer import PeerRecord
from .store import ReadModel
from .usecases import peers
from .usecases.presence import Presence
from .usecases.revocation import Revoker
from .usecases.streams import PeerStreams
from .usecases.telemetry import Telemetry, TelemetryGate
from .usecases.tokens import TokenCache

__all__ = ["REGISTRY_SUBSCRIPTIONS", "PeerAccounts", "RegistryApp"]

REGISTRY_SUBSCRIPTIONS: Table = (
    On("peers", PEER_EVENT_TYPES, "on_event"),
    On("users", (USER_DISABLED,), "on_event"),
)
"""``<ns>.peers``: ``peer.*`` from every producer (auth's ``peer.enrolled`` provisions
the peer; the registry's own are idempotent folds, and what makes them routable;
``peer.removed`` revokes broker access). ``<ns>.users``: ``user.disabled``, after which
every peer of the user loses broker access at once (issue 12, hole 9)."""


class PeerAccounts(Protocol):
    """Peers' accounts on the broker (:class:`~.usecases.broker_admin.BrokerAdmin`)."""

    async def provision(self, peer_id: str) -> None:
        """Make sure the peer's user, permissions and queue exist (idempotent)."""
        ...

    async def new_password(self, peer_id: str) -> str:
        """Give the peer's user a new password, and return it."""
        ...

    async def deprovision(self, peer_id: str) -> None:
        """Delete the peer's user and close its connections (idempotent)."""
        ...


class RegistryApp:
    """Peers, their liveness and their broker access.

    Parameters
    ----------
    ports
        The event log and the clock (liveness, rate limits, floods, token lifetimes).
    settings
        The registry's settings.
    security
        Token verification, and the disabled users.
    store
        The durable copy of the directory.
    accounts
        Peers' broker accounts.
    """

    def __init__(
        self,
        ports: Ports,
        settings: RegistrySettings,
        security: Security,
        *,
        store: ReadModel,
        accounts: PeerAccounts,
    ) -> None:
        self.ports = ports
        self.settings = settings
        self.security = security
        self.store = store
        self.accounts = accounts
        self.directory = PeerDirectory()
        self.streams = PeerStreams(ports.log, self.directory, producer=settings.service_name)
        tracker = LivenessTracker(
            default_interval_s=settings.default_interval_s,
            stale_after=settings.stale_after_intervals,
            offline_after=settings.offline_after_intervals,
            min_interval_s=settings.min_interval_s,
            max_interval_s=settings.max_interval_s,
            resume_grace_intervals=settings.resume_grace_intervals,
            resume_grace_s=settings.resume_grace_s,
        )
        self.presence = Presence(
            tracker,
            self.streams,
            self.directory,
            clock=ports.clock,
            sweep_interval_s=settings.sweep_interval_s,
            flood_refusals_per_s=settings.flood_refusals_per_s,
            flood_quiet_s=settings.flood_quiet_s,
        )
        self.tokens = TokenCache(security, max_size=settings.token_cache_size, clock=ports.clock)
        self.projector = Projector(
            self.directory, store, flush_interval_s=settings.flush_interval_s
        )
        self.revoker = Revoker(accounts.deprovision, retry_max_s=settings.revoke_retry_max_s)
        self.revoked_owners: set[str] = set()
        """Peers whose access was revoked because their owner is disabled."""
        self.telemetry = TelemetryGate(self)

    @property
    def clock(self) -> Clock:
        """The one clock."""
        return self.ports.clock

    # -- what it hears ----------------------------------------------------------------------

    async def on_event(self, event: RecordedEvent) -> None:
        """A ``peer.*`` event (folded; enrolled peers provisioned, removed ones revoked),
        or ``user.disabled`` (the user's peers lose broker access)."""
        if isinstance(event.data, UserDisabled):
            await peers.user_disabled(self, event.data.user_id)
        elif event.type in PEER_EVENT_TYPES:
            await peers.observe(self, event)

    async def on_heartbeat(self, message: Telemetry) -> None:
        """A heartbeat: into liveness (memory only), or counted as refused."""
        await self.telemetry.heartbeat(message)

    async def on_peer(self, message: Telemetry) -> None:
        """An announce or leaving message: its effect, or counted as refused.

        Raises
        ------
        Exception
            Only when the effect could not be recorded (the database away): retry.
        """
        await self.telemetry.presence(message)

    async def tick(self) -> None:
        """The registry's timers, once, in order: silence judged, liveness transitions
        recorded, peers of disabled owners revoked. (The platform runs each on its own
        period: :meth:`start`, and the sweep of disabled owners in its wiring.)"""
        await self.presence.sweep()
        await self.presence.settle()
        await peers.revoke_disabled_owners(self)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background writers (liveness, read model, revocations)."""
        self.presence.start()
        self.projector.start()
        self.revoker.start()

    async def stop(self) -> None:
        """Write what is left."""
        await self.revoker.stop()
        await self.presence.stop()
        await self.projector.stop()

    # -- look-ups (dictionary reads: the telemetry hot path uses them) -----------------------

    def is_known(self, peer_id: str) -> bool:
        """Whether a peer of this id was enrolled."""
        record = self.directory.get(peer_id)
        return record is not None and record.enrolled

    def is_removed(self, peer_id: str) -> bool:
        """Whether the peer was removed."""
        record = self.directory.get(peer_id)
        return record is not None and record.removed

    def revoked(self, record: PeerRecord) -> bool:
        """Whether the peer must have no broker access (removed, or its owner disabled)."""
        return record.removed or record.owner_id in self.security.disabled
