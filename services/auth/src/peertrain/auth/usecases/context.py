"""Everything the use cases need, built once at start-up."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import structlog
from jose import jwt
from prometheus_client import Counter

from peertrain.auth.config import AuthSettings
from peertrain.auth.domain.hashing import Argon2Params, PasswordHasher
from peertrain.auth.domain.passwords import PasswordPolicy
from peertrain.auth.domain.throttle import Limits
from peertrain.auth.domain.tokens import access_claims
from peertrain.auth.store import KeyStore, PeerStore, SessionStore, ThrottleStore, UserStore
from peertrain.common.app import ServiceContext
from peertrain.common.eventlog import VERSION_ONLY, EventLog, Repository
from peertrain.common.events import EventData, NewEvent
from peertrain.common.security import ACCESS_TOKEN_TYPE, ALGORITHMS, Security

__all__ = ["AuthContext", "IssuedTokens"]

PRODUCER = "auth"

PASSWORD_CHECKS = Counter(
    "peertrain_auth_password_checks_total",
    "Argon2 verifications of a presented password (logins, the admin at start-up)",
)
PASSWORD_HASHES = Counter(
    "peertrain_auth_password_hashes_total",
    "Argon2 hashes of a new password (registrations, the admin at start-up)",
)


@dataclass(frozen=True)
class IssuedTokens:
    """What a login, a refresh or a peer login hands out."""

    access_token: str
    expires_in: int
    refresh_token: str | None = None


@dataclass
class AuthContext:
    """The auth service's stores, hasher, signer and event log."""

    settings: AuthSettings
    log: EventLog
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
    def build(cls, ctx: ServiceContext, settings: AuthSettings, security: Security) -> AuthContext:
        """Wire the stores on the service's own database."""
        params = Argon2Params(
            time_cost=settings.argon2_time_cost,
            memory_kib=settings.argon2_memory_kib,
            parallelism=settings.argon2_parallelism,
        )
        return cls(
            settings=settings,
            log=ctx.log,
            security=security,
            users=UserStore(ctx.db),
            sessions=SessionStore(ctx.db),
            throttle=ThrottleStore(ctx.db),
            keys=KeyStore(ctx.db, settings.signing_key_dir, cache_s=settings.signer_cache_s),
            peers=PeerStore(ctx.db),
            hasher=PasswordHasher(params),
            policy=PasswordPolicy(),
            hash_slots=asyncio.Semaphore(settings.hash_concurrency),
        )

    async def ensure_indexes(self) -> None:
        """Create the collections' indexes (idempotent)."""
        await self.users.ensure_indexes()
        await self.peers.ensure_indexes()

    @staticmethod
    def now() -> datetime:
        """The current time (UTC), to the millisecond (what BSON dates keep)."""
        now = datetime.now(UTC)
        return now.replace(microsecond=now.microsecond // 1000 * 1000)

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
            now=int(time.time()),
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
