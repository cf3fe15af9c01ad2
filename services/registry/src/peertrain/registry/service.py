"""The registry as one object: what routes, subscribers and consumers call.

It owns the in-memory read model (:class:`Directory`), the liveness
(:class:`Presence`), the stream writer, the broker provisioning and the durable copy.
Queries never touch MongoDB.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
import structlog

from peertrain.common.app import ServiceContext
from peertrain.common.events import RecordedEvent
from peertrain.common.events.peers import PeerEnrolled, PeerRemoved, peer_queue
from peertrain.common.events.users import UserDisabled
from peertrain.common.security import Principal, Security

from .broker_admin import BrokerAdmin, peer_username
from .config import RegistrySettings
from .directory import Directory
from .domain.errors import NotYourPeer, PeerNotFound, PeerQuotaExceeded
from .domain.liveness import LivenessTracker, Status
from .domain.peer import PeerRecord, decide_registered, decide_removed, decide_settings
from .domain.selection import PeerFilters, PeerView, Prefer, choose, matches, visible_to
from .presence import Clock, Presence
from .projection import Projector, Rebuilt, catch_up, rebuild
from .revocation import Revoker
from .store import ReadModelStore
from .streams import PeerStreams
from .telemetry import TelemetryConsumer
from .tokens import TokenCache

__all__ = ["BrokerGrant", "Registry"]

log = structlog.get_logger(__name__)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class BrokerGrant:
    """Broker credentials handed to a peer (the password is new each time)."""

    username: str
    password: str
    queue: str


class Registry:
    """Peers, their liveness and their broker access."""

    def __init__(
        self,
        ctx: ServiceContext,
        settings: RegistrySettings,
        security: Security,
        *,
        clock: Clock | None = None,
    ) -> None:
        self.ctx = ctx
        self.settings = settings
        self.security = security
        self.directory = Directory()
        self.store = ReadModelStore(ctx.db)
        self.streams = PeerStreams(ctx.log, self.directory, producer=settings.service_name)
        self.tracker = LivenessTracker(
            default_interval_s=settings.default_interval_s,
            stale_after=settings.stale_after_intervals,
            offline_after=settings.offline_after_intervals,
            min_interval_s=settings.min_interval_s,
            max_interval_s=settings.max_interval_s,
        )
        self.presence = Presence(
            self.tracker,
            self.streams,
            self.directory,
            self.ensure_registered,
            clock=clock,
            sweep_interval_s=settings.sweep_interval_s,
        )
        self.tokens = TokenCache(security, max_size=settings.token_cache_size)
        self.telemetry = TelemetryConsumer(
            settings, self.presence, self.tokens, known=self.is_known, removed=self.is_removed
        )
        self.projector = Projector(
            self.directory,
            self.store,
            flush_interval_s=settings.flush_interval_s,
        )
        self.http = httpx.AsyncClient(
            base_url=settings.rabbitmq_management_url,
            auth=(
                settings.rabbitmq_admin_user,
                settings.rabbitmq_admin_password.get_secret_value(),
            ),
            timeout=10.0,
        )
        self.broker_admin = BrokerAdmin(
            self.http,
            ctx.broker,
            vhost=settings.rabbitmq_vhost,
            delivery_limit=settings.delivery_limit,
            password_bytes=settings.peer_password_bytes,
        )
        self.revoker = Revoker(
            self.broker_admin.deprovision, retry_max_s=settings.revoke_retry_max_s
        )

    # -- lifecycle --------------------------------------------------------------------------

    async def load(self) -> None:
        """Read model from the store, then the log beyond its checkpoint; seed liveness."""
        records, checkpoint = await self.store.load()
        self.directory.replace_with(Directory(records, position=checkpoint))
        folded = await catch_up(self.ctx.log, self.directory)
        seeded = self.presence.seed()
        for record in self.directory.records():  # idempotent: covers a crash mid-revocation
            if record.registered and self._revoked(record):
                self.revoker.later(record.peer_id)
        gc.freeze()  # what start-up loaded lives on: keep it out of the collector's scans
        log.info("read model loaded", peers=len(records), caught_up=folded, online=seeded)

    def start(self) -> None:
        """Start consuming telemetry and the background writers."""
        self.presence.start()
        self.projector.start()
        self.telemetry.start()
        self.revoker.start()

    async def stop(self) -> None:
        """Stop consuming, write what is left, close the management API client."""
        await self.telemetry.stop()
        await self.revoker.stop()
        await self.presence.stop()
        await self.projector.stop()
        await self.http.aclose()

    # -- commands -------------------------------------------------------------------------

    async def ensure_registered(
        self, peer_id: str, *, causation: RecordedEvent | None = None
    ) -> PeerRecord:
        """Provision an enrolled peer on the broker and record ``peer.registered`` (once).

        Raises
        ------
        PeerQuotaExceeded
            If its owner already has ``max_peers_per_user`` registered peers.
        """
        record = await self.streams.record(peer_id)
        if record.enrolled and not record.registered and not self._revoked(record):
            self._check_quota(record)
            await self.broker_admin.provision(peer_id)
            await self.streams.execute(peer_id, decide_registered, causation=causation)
            log.info("peer registered", peer_id=peer_id, queue=peer_queue(peer_id))
            record = await self.streams.record(peer_id)
        return record

    async def on_peer_event(self, event: RecordedEvent) -> None:
        """Bus handler for ``peer.*`` events: fold them; provision newly enrolled peers.

        A stream this registry's log does not hold (the bus is shared) is read from the
        log, found empty, and ignored.
        """
        peer_id = event.stream.partition(":")[2]
        if peer_id in self.directory:
            await self.streams.observe(event)
        else:
            await self.streams.record(peer_id)
        if isinstance(event.data, PeerEnrolled):
            try:
                await self.ensure_registered(peer_id, causation=event)
            except PeerQuotaExceeded as exc:  # refused for good: not a reason to retry
                log.warning("peer not registered", peer_id=peer_id, reason=str(exc))
        elif isinstance(event.data, PeerRemoved):
            await self.revoker.revoke(peer_id)

    async def on_user_disabled(self, event: RecordedEvent) -> None:
        """Bus handler for ``user.disabled``: every peer of the user loses broker access."""
        if not isinstance(event.data, UserDisabled):
            return
        self.security.disabled.add(event.data.user_id)  # also refuses their tokens here
        for record in self.directory.records():
            if record.owner_id == event.data.user_id and record.registered:
                await self.revoker.revoke(record.peer_id)

    def is_known(self, peer_id: str) -> bool:
        """Whether a peer of this id was enrolled (a dictionary look-up)."""
        record = self.directory.get(peer_id)
        return record is not None and record.enrolled

    def is_removed(self, peer_id: str) -> bool:
        """Whether the peer was removed (the telemetry hot path: a dictionary look-up)."""
        record = self.directory.get(peer_id)
        return record is not None and record.removed

    def _revoked(self, record: PeerRecord) -> bool:
        return record.removed or record.owner_id in self.security.disabled

    def _check_quota(self, record: PeerRecord) -> None:
        limit = self.settings.max_peers_per_user
        owned = sum(
            1
            for r in self.directory.records()
            if r.owner_id == record.owner_id
            and r.registered
            and not r.removed
            and r.peer_id != record.peer_id
        )
        if owned >= limit:
            raise PeerQuotaExceeded(
                f"this user already has {owned} registered peers (the limit is {limit})",
                detail={"quota": "peers", "limit": limit, "used": owned},
            )

    async def broker_credentials(self, who: Principal, peer_id: str) -> BrokerGrant:
        """New broker credentials for the calling peer (it must be ``peer_id``)."""
        if not who.is_peer or who.subject != peer_id:
            raise NotYourPeer("a peer may only get its own broker credentials")
        record = await self.streams.record(peer_id)
        if not record.enrolled or self._revoked(record):
            raise PeerNotFound("no such peer")
        if not record.registered:
            self._check_quota(record)
        await self.broker_admin.provision(peer_id)
        if not record.registered:
            await self.streams.execute(peer_id, decide_registered)
        password = await self.broker_admin.new_password(peer_id)
        return BrokerGrant(peer_username(peer_id), password, peer_queue(peer_id))

    async def change_settings(
        self, who: Principal, peer_id: str, *, shared: bool | None, disabled: bool | None
    ) -> PeerView:
        """Share or disable a peer (its owner or an admin)."""
        view = self.get(who, peer_id)
        if not (who.is_admin or view.record.owner_id == who.subject):
            raise NotYourPeer("only the peer's owner or an admin may change it")
        await self.streams.execute(
            peer_id,
            lambda r: decide_settings(r, shared=shared, disabled=disabled),
            actor=who.subject,
        )
        return self.get(who, peer_id)

    async def remove(self, who: Principal, peer_id: str) -> None:
        """Remove a peer for good (its owner or an admin): ``peer.removed``, and its
        broker user deleted at once (retried in the background if RabbitMQ refuses)."""
        view = self.get(who, peer_id)
        if not (who.is_admin or view.record.owner_id == who.subject):
            raise NotYourPeer("only the peer's owner or an admin may remove it")
        last_seen = self.presence.last_seen(peer_id) or self.clock_now()
        await self.streams.execute(
            peer_id, lambda r: decide_removed(r, "removed", last_seen), actor=who.subject
        )
        self.presence.forget(peer_id)
        await self.revoker.revoke(peer_id)

    @staticmethod
    def clock_now() -> datetime:
        """Wall-clock now."""
        return datetime.now(UTC)

    async def replay(self) -> Rebuilt:
        """Drop the read model and rebuild it from the log (memory and store)."""
        async with self.projector.lock:
            fresh, result = await rebuild(self.ctx.log, self.store)
            self.directory.replace_with(fresh)
            await catch_up(self.ctx.log, self.directory)  # appended meanwhile
            await self.projector.flush_locked()
        self.presence.seed()
        return result

    # -- queries --------------------------------------------------------------------------

    def view(self, record: PeerRecord) -> PeerView:
        """The record with its liveness now."""
        last_seen = self.presence.last_seen(record.peer_id) or record.last_seen
        return PeerView(record, self.presence.status(record.peer_id), last_seen)

    def visible(self, who: Principal) -> Iterator[PeerView]:
        """Every enrolled peer ``who`` may see."""
        for record in self.directory.records():
            if record.enrolled and visible_to(record, who):
                yield self.view(record)

    def get(self, who: Principal, peer_id: str) -> PeerView:
        """One peer ``who`` may see (any other answers :class:`PeerNotFound`)."""
        record = self.directory.get(peer_id)
        if record is None or not record.enrolled or not visible_to(record, who):
            raise PeerNotFound("no such peer")
        return self.view(record)

    def list_peers(self, who: Principal, filters: PeerFilters, *, limit: int) -> list[PeerView]:
        """Peers ``who`` may see that match ``filters``, oldest enrollment first."""
        found = [v for v in self.visible(who) if matches(v, filters)]
        found.sort(key=lambda v: (v.record.enrolled_at or _EPOCH, v.record.peer_id))
        return found[:limit]

    def select(
        self,
        who: Principal,
        count: int,
        filters: PeerFilters,
        prefer: Prefer,
        *,
        seed: int | None = None,
    ) -> list[PeerView]:
        """``count`` usable active peers matching ``filters``, best first by ``prefer``."""
        active = PeerFilters(
            status=Status.ACTIVE,
            device=filters.device,
            min_memory_gb=filters.min_memory_gb,
            owner_id=filters.owner_id,
        )
        candidates = [v for v in self.visible(who) if matches(v, active)]
        rng = random.Random(seed) if seed is not None else None
        return choose(candidates, count, prefer, rng=rng, caller_id=who.subject)
