"""What every registry use case works with, built once at start-up.

The in-memory read model (:class:`~peertrain.registry.directory.PeerDirectory`), the
liveness (:class:`Presence`), the stream writer, the broker provisioning and the
durable copy. Queries never touch MongoDB.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from peertrain.common.app import ServiceContext
from peertrain.common.clock import SYSTEM_CLOCK, Clock
from peertrain.common.security import Security
from peertrain.registry.config import RegistrySettings
from peertrain.registry.directory import PeerDirectory, Projector
from peertrain.registry.domain.liveness import LivenessTracker
from peertrain.registry.domain.peer import PeerRecord
from peertrain.registry.store import ReadModelStore

from .broker_admin import BrokerAdmin
from .presence import Presence
from .revocation import Revoker
from .streams import PeerStreams
from .tokens import TokenCache

__all__ = ["RegistryContext"]


@dataclass
class RegistryContext:
    """Peers, their liveness and their broker access: the registry's resources."""

    ctx: ServiceContext
    settings: RegistrySettings
    clock: Clock
    """The one clock: liveness, rate limits, floods, token lifetimes, queries."""
    security: Security
    directory: PeerDirectory
    store: ReadModelStore
    streams: PeerStreams
    presence: Presence
    tokens: TokenCache
    projector: Projector
    http: httpx.AsyncClient
    """The RabbitMQ management API (closed at shutdown)."""
    broker_admin: BrokerAdmin
    revoker: Revoker
    revoked_owners: set[str] = field(default_factory=set)
    """Peers whose access was revoked because their owner is disabled."""

    @classmethod
    def build(
        cls,
        ctx: ServiceContext,
        settings: RegistrySettings,
        security: Security,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> RegistryContext:
        """Wire the registry on the service's connections."""
        directory = PeerDirectory()
        store = ReadModelStore(ctx.db)
        streams = PeerStreams(ctx.log, directory, producer=settings.service_name)
        tracker = LivenessTracker(
            default_interval_s=settings.default_interval_s,
            stale_after=settings.stale_after_intervals,
            offline_after=settings.offline_after_intervals,
            min_interval_s=settings.min_interval_s,
            max_interval_s=settings.max_interval_s,
            resume_grace_intervals=settings.resume_grace_intervals,
            resume_grace_s=settings.resume_grace_s,
        )
        presence = Presence(
            tracker,
            streams,
            directory,
            clock=clock,
            sweep_interval_s=settings.sweep_interval_s,
            flood_refusals_per_s=settings.flood_refusals_per_s,
            flood_quiet_s=settings.flood_quiet_s,
        )
        http = httpx.AsyncClient(
            base_url=settings.rabbitmq_management_url,
            auth=(
                settings.rabbitmq_admin_user,
                settings.rabbitmq_admin_password.get_secret_value(),
            ),
            timeout=10.0,
        )
        broker_admin = BrokerAdmin(
            http,
            ctx.broker,
            vhost=settings.rabbitmq_vhost,
            delivery_limit=settings.delivery_limit,
            password_bytes=settings.peer_password_bytes,
        )
        return cls(
            ctx=ctx,
            settings=settings,
            clock=clock,
            security=security,
            directory=directory,
            store=store,
            streams=streams,
            presence=presence,
            tokens=TokenCache(security, max_size=settings.token_cache_size, clock=clock),
            projector=Projector(directory, store, flush_interval_s=settings.flush_interval_s),
            http=http,
            broker_admin=broker_admin,
            revoker=Revoker(broker_admin.deprovision, retry_max_s=settings.revoke_retry_max_s),
        )

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background writers (liveness, read model, revocations)."""
        self.presence.start()
        self.projector.start()
        self.revoker.start()

    async def stop(self) -> None:
        """Write what is left, close the management API client."""
        await self.revoker.stop()
        await self.presence.stop()
        await self.projector.stop()
        await self.http.aclose()

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
