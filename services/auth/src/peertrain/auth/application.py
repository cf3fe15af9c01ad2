"""The auth service's application: its ports, stores, hasher and signer, and what it
hears, as data (:data:`AUTH_SUBSCRIPTIONS`).

``auth.audit`` receives every event auth produces, and the registry's ``peer.removed``:
:meth:`AuthApp.on_event` keeps the security audit trail (one structured log line per
event, a counter for refresh-token reuse), applies ``user.disabled`` locally and marks a
removed peer so that it gets no more tokens. Its effects are idempotent (a log line, a
flag set, sessions revoked), so a redelivery is harmless.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from jose import jwt
from prometheus_client import Counter
from pymongo.asynchronous.database import AsyncDatabase

from peertrain.auth.config import AuthSettings
from peertrain.auth.domain.hashing import Argon2Params, PasswordHasher
from peertrain.auth.domain.passwords import PasswordPolicy
from peertrain.auth.domain.throttle import Limits
from peertrain.auth.domain.tokens import IssuedTokens, access_claims
from peertrain.auth.store import KeyStore, PeerStore, SessionStore, ThrottleStore, UserStore
from peertrain.common.app import On, Ports, Table
from peertrain.common.eventlog import VERSION_ONLY, LogPort, Repository
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.auth import AUTH_KEYS_ROTATED, AUTH_REFRESH_REUSE_DETECTED
from peertrain.common.events.peers import PEER_ENROLLED, PEER_REMOVED, PeerRemoved
from peertrain.common.events.users import USER_DISABLED, USER_REGISTERED, UserDisabled
from peertrain.common.security import ACCESS_TOKEN_TYPE, ALGORITHMS, Security

from .usecases import accounts, keys, peers
from .usecases.housekeeping import housekeeping

__all__ = ["AUDITED", "AUDIT_QUEUE", "AUTH_SUBSCRIPTIONS", "AuthApp"]

log = structlog.get_logger(__name__)

PRODUCER = "auth"

AUDIT_QUEUE = "audit"
"""The purpose of auth's audit queue (``auth.audit`` with the default prefix)."""
AUDITED = (
    USER_REGISTERED,
    USER_DISABLED,
    PEER_ENROLLED,
    PEER_REMOVED,
    AUTH_KEYS_ROTATED,
    AUTH_REFRESH_REUSE_DETECTED,
)

AUTH_SUBSCRIPTIONS: Table = (On(AUDIT_QUEUE, AUDITED, "on_event"),)
"""What auth hears (its token-verification queue, ``auth.security``, is the common
security's own)."""

PASSWORD_CHECKS = Counter(
    "peertrain_auth_password_checks_total",
    "Argon2 verifications of a presented password (logins, the admin at start-up)",
)
PASSWORD_HASHES = Counter(
    "peertrain_auth_password_hashes_total",
    "Argon2 hashes of a new password (registrations, the admin at start-up)",
)
SECURITY_EVENTS = Counter(
    "peertrain_auth_security_events_total", "Security-relevant auth events seen", ["type"]
)


@dataclass
class AuthApp:
    """The auth service: its ports, stores, hasher, signer and settings; the use cases
    (:mod:`peertrain.auth.usecases`) take it."""

    ports: Ports
    settings: AuthSettings
    security: Security
    users: UserStore
    sessions: SessionStore
    throttle: ThrottleStore
    keys: KeyStore
    peers: PeerStore
    hasher: PasswordHasher
    policy: PasswordPolicy
    hash_slots: asyncio.Semaphore
    streams: Repository[int] = field(init=False)
    """Appends to auth's streams (``user:``, ``peer:`` enrollment, ``auth:keys``,
    ``family:``): auth decides on their versions only."""
    limits: Limits = field(init=False)
    """Throttling limits, from the settings."""

    def __post_init__(self) -> None:
        self.streams = Repository(self.log, VERSION_ONLY, producer=PRODUCER)
        s = self.settings
        self.limits = Limits.of(
            login_max_failures=s.login_max_failures,
            login_max_failures_per_address=s.login_max_failures_per_address,
            login_window_s=s.login_window_s,
            register_max_per_address=s.register_max_per_address,
            register_window_s=s.register_window_s,
        )

    @classmethod
    def build(
        cls,
        ports: Ports,
        db: AsyncDatabase[dict[str, Any]],
        settings: AuthSettings,
        security: Security,
    ) -> AuthApp:
        """The application on the service's own database (its stores)."""
        params = Argon2Params(
            time_cost=settings.argon2_time_cost,
            memory_kib=settings.argon2_memory_kib,
            parallelism=settings.argon2_parallelism,
        )
        return cls(
            ports=ports,
            settings=settings,
            security=security,
            users=UserStore(db),
            sessions=SessionStore(db),
            throttle=ThrottleStore(db),
            keys=KeyStore(
                db,
                settings.signing_key_dir,
                cache_s=settings.signer_cache_s,
                clock=ports.clock,
            ),
            peers=PeerStore(db),
            hasher=PasswordHasher(params),
            policy=PasswordPolicy(),
            hash_slots=asyncio.Semaphore(settings.hash_concurrency),
        )

    @property
    def log(self) -> LogPort:
        """The shared event log."""
        return self.ports.log

    async def ensure_indexes(self) -> None:
        """Create the collections' indexes (idempotent)."""
        await self.users.ensure_indexes()
        await self.peers.ensure_indexes()

    def now(self) -> datetime:
        """The current time (UTC), to the millisecond (what BSON dates keep)."""
        now = self.ports.clock.now()
        return now.replace(microsecond=now.microsecond // 1000 * 1000)

    # -- start-up, events, timer ----------------------------------------------------------

    async def start(self) -> None:
        """Start-up: indexes, keys, the admin, what a crash left out, the log's disabled
        accounts, keys due to retire."""
        await self.ensure_indexes()
        await keys.ensure_keys(self)
        await accounts.bootstrap_admin(self)
        await accounts.record_pending(self)
        await peers.record_pending(self)
        await accounts.replay_disabled(self)
        await keys.retire_due(self)

    async def on_event(self, event: RecordedEvent) -> None:
        """An audited event: log it, count it, apply its local effects (idempotent)."""
        SECURITY_EVENTS.labels(type=event.type).inc()
        level = "warning" if event.type == AUTH_REFRESH_REUSE_DETECTED else "info"
        getattr(log, level)("audit", audit_type=event.type, stream=event.stream, actor=event.actor)
        if isinstance(event.data, UserDisabled) and await self.users.get(event.data.user_id):
            await accounts.apply_disabled(self, event.data.user_id)
        elif isinstance(event.data, PeerRemoved):
            await peers.removed(self, event.data, at=event.occurred_at)

    async def tick(self) -> None:
        """Housekeeping: retire due keys; purge expired sessions, throttle windows and
        enrollments."""
        await housekeeping(self)

    # -- passwords (CPU-heavy: in threads, a bounded number at once) ----------------------

    async def hash_password(self, password: str) -> str:
        """Argon2id hash, computed off the event loop."""
        async with self.hash_slots:
            PASSWORD_HASHES.inc()
            return await asyncio.to_thread(self.hasher.hash, password)

    async def verify_password(self, password: str, stored: str | None) -> tuple[bool, str | None]:
        """Argon2id verification (a dummy hash when ``stored`` is ``None``)."""
        async with self.hash_slots:
            PASSWORD_CHECKS.inc()
            return await asyncio.to_thread(self.hasher.verify, password, stored)

    # -- tokens ---------------------------------------------------------------------------

    async def access_token(
        self,
        *,
        subject: str,
        roles: tuple[str, ...],
        username: str | None = None,
        owner: str | None = None,
    ) -> IssuedTokens:
        """Sign an access token with the active key."""
        kid, key = await self.keys.signer()
        ttl = self.settings.access_ttl_s
        claims = access_claims(
            subject=subject,
            roles=roles,
            issuer=self.security.settings.issuer,
            audience=self.security.settings.audience,
            now=int(self.ports.clock.time()),
            ttl_s=ttl,
            username=username,
            owner=owner,
        )
        token = jwt.encode(
            claims, key, algorithm=ALGORITHMS[0], headers={"kid": kid, "typ": ACCESS_TOKEN_TYPE}
        )
        return IssuedTokens(access_token=str(token), expires_in=ttl)

    # -- events ---------------------------------------------------------------------------

    def event(self, data: EventData, *, actor: str | None, event_id: str | None = None) -> NewEvent:
        """One event to append, correlated with the current request."""
        request_id = structlog.contextvars.get_contextvars().get("request_id")
        return NewEvent.of(
            data,
            producer=PRODUCER,
            actor=actor,
            correlation_id=request_id if isinstance(request_id, str) else None,
            event_id=event_id,
        )
