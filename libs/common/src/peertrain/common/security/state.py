"""A process's security state: trusted keys and disabled users, kept from the log.

The event log is the source of truth. At start-up the state is read from it; later,
``auth.keys_rotated`` and ``user.disabled`` events arriving on the bus update it (a
key-set event triggers a re-read of the log, so a stale or duplicated message can never
install an outdated key set); a periodic re-read is the safety net, and a token naming
an unknown ``kid`` triggers a rate-limited re-read (auth appends the new key set
*before* it signs anything with the new key).
"""

from __future__ import annotations

import asyncio
import math

import structlog

from peertrain.common.eventlog import EventLog
from peertrain.common.events import RecordedEvent
from peertrain.common.events.auth import AUTH_KEYS_ROTATED, AUTH_KEYS_STREAM, KeysRotated
from peertrain.common.events.users import USER_DISABLED, UserDisabled
from peertrain.common.periodic import Periodic

from .claims import Principal
from .disabled import DisabledUsers
from .errors import InvalidToken, UnknownSigningKey
from .keyset import KeySet
from .settings import SecuritySettings
from .verifier import TokenVerifier

__all__ = ["SECURITY_EVENT_TYPES", "Security"]

log = structlog.get_logger(__name__)

SECURITY_EVENT_TYPES = (AUTH_KEYS_ROTATED, USER_DISABLED)
POSITION_OVERLAP = 10_000
"""Positions re-read before the last one seen (appends in flight become visible late)."""
"""The event types that change what a verifier accepts."""


class Security:
    """Trusted keys, disabled users and the verifier that uses them.

    Parameters
    ----------
    log
        The shared event log (``None``: a state fed by hand, e.g. in unit tests).
    settings
        Issuer, audience, leeway and refresh intervals.
    """

    def __init__(self, log: EventLog | None, settings: SecuritySettings | None = None) -> None:
        self.settings = settings or SecuritySettings()
        self.keys = KeySet()
        self.disabled = DisabledUsers()
        self.verifier = TokenVerifier(
            self.keys,
            self.disabled,
            issuer=self.settings.issuer,
            audience=self.settings.audience,
            leeway_s=self.settings.leeway_s,
        )
        self._log = log
        self._lock = asyncio.Lock()
        self._requested = 0
        self._completed = 0
        self._last_refresh = -math.inf
        self._position = 0
        self._refresher = Periodic(
            "security-refresh", self.settings.refresh_interval_s, self.refresh
        )

    # -- verifying --------------------------------------------------------------------

    def verify(self, token: str) -> Principal:
        """Verify with what this process knows now (no I/O); see :class:`TokenVerifier`."""
        return self.verifier.verify(token)

    async def authenticate(self, token: str) -> Principal:
        """Verify; on an unknown ``kid``, re-read the log once (rate-limited) and retry."""
        try:
            try:
                return self.verifier.verify(token)
            except UnknownSigningKey:
                if not await self.refresh_if_stale():
                    raise
                return self.verifier.verify(token)
        except InvalidToken as exc:  # the reason stays in the log, never in the answer
            log.info("token refused", reason=exc.reason, keys_known=len(self.keys.kids))
            raise

    # -- keeping up with the log --------------------------------------------------------

    async def refresh(self) -> None:
        """Re-read keys and disabled users from the log.

        Concurrent calls coalesce: a call returns once a read that *started after it
        was made* has finished, so a burst of events costs one or two reads.
        """
        self._requested += 1
        wanted = self._requested
        async with self._lock:
            if self._completed >= wanted:
                return
            started = self._requested
            self._last_refresh = asyncio.get_running_loop().time()
            await self._load()
            self._completed = started

    async def refresh_if_stale(self) -> bool:
        """Refresh unless the last refresh is younger than ``min_refresh_interval_s``."""
        age = asyncio.get_running_loop().time() - self._last_refresh
        if self._log is None or age < self.settings.min_refresh_interval_s:
            return False
        await self.refresh()
        return True

    async def _load(self) -> None:
        # Incremental: only events after the last position read. (A full re-read pages
        # through the whole log, and on FerretDB every page is a scan of all of it: five
        # services doing that every minute kept the database busy as the log grew.)
        if self._log is None:
            return
        latest: KeysRotated | None = None
        latest_seq = self.keys.version if self._position else 0
        disabled: list[str] = []
        # An event is given its position just before it is written, so one with a lower
        # position may still become visible after a higher one was read: overlap.
        start = max(0, self._position - POSITION_OVERLAP)
        async for event in self._log.read_all(
            after_position=start, types=list(SECURITY_EVENT_TYPES)
        ):
            self._position = max(self._position, event.position)
            data = event.data
            if isinstance(data, KeysRotated):
                if event.stream == AUTH_KEYS_STREAM and event.seq > latest_seq:
                    latest, latest_seq = data, event.seq
            elif isinstance(data, UserDisabled):
                disabled.append(data.user_id)
        if latest is not None:
            before = self.keys.kids
            self.keys.replace([k.model_dump() for k in latest.keys], version=latest_seq)
            if self.keys.kids != before:
                log.info("signing keys known", kids=sorted(self.keys.kids), version=latest_seq)
        self.disabled.update(disabled)
        log.debug("security state loaded", kids=sorted(self.keys.kids), disabled=len(disabled))

    async def on_event(self, event: RecordedEvent) -> None:
        """Bus handler for :data:`SECURITY_EVENT_TYPES` (idempotent)."""
        data = event.data
        if isinstance(data, UserDisabled):
            self.disabled.add(data.user_id)
        elif (
            isinstance(data, KeysRotated)
            and event.stream == AUTH_KEYS_STREAM
            and event.seq == self.keys.version + 1
        ):
            self.keys.replace([k.model_dump() for k in data.keys], version=event.seq)
        else:
            await self.refresh()

    # -- background safety net ----------------------------------------------------------

    def start(self) -> None:
        """Re-read the log every ``refresh_interval_s`` in the background."""
        if self._log is not None:
            self._refresher.start()

    async def stop(self) -> None:
        """Stop the background re-reads."""
        await self._refresher.stop()
