"""A process's security state: trusted keys and revoked principals, kept from the log.

The event log is the source of truth. At start-up the state is read from it; later,
``auth.keys_rotated``, ``user.disabled`` and ``peer.removed`` events arriving on the bus
update it, and a periodic re-read is the safety net.

A key set is never taken from the bus as such: the broker is shared (tests, another
deployment, a replayed dead letter), so an ``auth.keys_rotated`` message may belong to
another log whose stream happens to have the same name and the next ``seq``. A key-set
message only makes the process read ``auth:keys`` on from its own log, and the set
installed is the log's. A token naming an unknown ``kid`` triggers a rate-limited
re-read of the whole ``auth:keys`` stream (auth appends the new key set *before* it
signs anything with the new key), which also repairs a set that went wrong somehow: a
token auth has just signed verifies everywhere within ``min_refresh_interval_s``.

A revocation (a disabled user, a removed peer) is taken from the bus at once: it can
only refuse more, and ids are unique across logs, so a foreign one refuses nobody.
"""

from __future__ import annotations

import asyncio
import math

import structlog

from peertrain.common.clock import SYSTEM_CLOCK, Clock
from peertrain.common.eventlog import LogPort
from peertrain.common.events import RecordedEvent
from peertrain.common.events.auth import AUTH_KEYS_ROTATED, AUTH_KEYS_STREAM, KeysRotated
from peertrain.common.events.peers import PEER_REMOVED, PeerRemoved
from peertrain.common.events.users import USER_DISABLED, UserDisabled
from peertrain.common.periodic import Periodic

from .claims import Principal
from .disabled import DisabledUsers
from .errors import InvalidToken, UnknownSigningKey
from .keyset import KeySet
from .settings import SecuritySettings
from .verifier import TokenVerifier

__all__ = ["REVOCATION_EVENT_TYPES", "SECURITY_EVENT_TYPES", "Security"]

log = structlog.get_logger(__name__)

REVOCATION_EVENT_TYPES = (USER_DISABLED, PEER_REMOVED)
"""The event types that refuse a principal's tokens before they expire."""
SECURITY_EVENT_TYPES = (AUTH_KEYS_ROTATED, *REVOCATION_EVENT_TYPES)
"""The event types that change what a verifier accepts."""
POSITION_OVERLAP = 10_000
"""Positions re-read before the last one seen (appends in flight become visible late)."""


class Security:
    """Trusted keys, revoked users and peers, and the verifier that uses them.

    Parameters
    ----------
    log
        The shared event log (``None``: a state fed by hand, e.g. in unit tests).
    settings
        Issuer, audience, leeway and refresh intervals.
    clock
        Its wall-clock time judges tokens' lifetimes (tests pass a
        :class:`~peertrain.common.clock.ManualClock`).
    """

    def __init__(
        self,
        log: LogPort | None,
        settings: SecuritySettings | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.settings = settings or SecuritySettings()
        self.keys = KeySet()
        self.disabled = DisabledUsers()
        self.verifier = TokenVerifier(
            self.keys,
            self.disabled,
            issuer=self.settings.issuer,
            audience=self.settings.audience,
            leeway_s=self.settings.leeway_s,
            clock=clock,
        )
        self._log = log
        self._lock = asyncio.Lock()
        self._requested = 0
        self._completed = 0
        self._last_refresh = -math.inf
        self._position = 0
        self._all_keys = False
        self._refresher = Periodic(
            "security-refresh", self.settings.refresh_interval_s, self.refresh
        )

    # -- verifying --------------------------------------------------------------------

    def verify(self, token: str) -> Principal:
        """Verify with what this process knows now (no I/O); see :class:`TokenVerifier`."""
        return self.verifier.verify(token)

    async def authenticate(self, token: str) -> Principal:
        """Verify; on an unknown ``kid``, re-read the log's key sets once (rate-limited)
        and retry."""
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

    async def refresh(self, *, all_keys: bool = False) -> None:
        """Re-read keys and revocations from the log.

        Concurrent calls coalesce: a call returns once a read that *started after it
        was made* has finished, so a burst of events costs one or two reads.

        Parameters
        ----------
        all_keys
            Read the whole ``auth:keys`` stream and install its newest set, whatever
            the version held now (not only what follows it).
        """
        self._requested += 1
        self._all_keys = self._all_keys or all_keys
        wanted = self._requested
        async with self._lock:
            if self._completed >= wanted:
                return
            started = self._requested
            all_keys, self._all_keys = self._all_keys, False
            self._last_refresh = asyncio.get_running_loop().time()
            await self._load(all_keys=all_keys)
            self._completed = started

    async def refresh_if_stale(self) -> bool:
        """Re-read every key set unless the last refresh is younger than
        ``min_refresh_interval_s`` (a forged ``kid`` must not become a database load)."""
        age = asyncio.get_running_loop().time() - self._last_refresh
        if self._log is None or age < self.settings.min_refresh_interval_s:
            return False
        await self.refresh(all_keys=True)
        return True

    async def _load(self, *, all_keys: bool = False) -> None:
        if self._log is None:
            return
        await self._load_keys(after_seq=0 if all_keys else self.keys.version)
        await self._load_revocations()

    async def _load_keys(self, *, after_seq: int, expected_id: str | None = None) -> None:
        """Install the newest key set of ``auth:keys`` after ``after_seq`` (caller holds
        the lock). ``after_seq`` 0 reads the whole stream: its newest set is installed
        even if this process held a higher version (one the log never had)."""
        assert self._log is not None
        found = await self._log.read_stream(AUTH_KEYS_STREAM, after_seq=after_seq)
        rotations = [e for e in found if isinstance(e.data, KeysRotated)]
        if expected_id is not None and not any(e.id == expected_id for e in rotations):
            log.warning(
                "ignoring a key set that is not in this log",
                event_id=expected_id,
                version=self.keys.version,
            )
        if not rotations:
            return
        newest = rotations[-1]
        assert isinstance(newest.data, KeysRotated)
        if after_seq == 0 or newest.seq > self.keys.version:
            before = self.keys.kids
            self.keys.replace([k.model_dump() for k in newest.data.keys], version=newest.seq)
            if self.keys.kids != before:
                log.info("signing keys known", kids=sorted(self.keys.kids), version=newest.seq)

    async def _load_revocations(self) -> None:
        # Incremental: only events after the last position read. (A full re-read pages
        # through the whole log, and on FerretDB every page is a scan of all of it: five
        # services doing that every minute kept the database busy as the log grew.)
        assert self._log is not None
        users: list[str] = []
        peers: list[str] = []
        # An event is given its position just before it is written, so one with a lower
        # position may still become visible after a higher one was read: overlap.
        start = max(0, self._position - POSITION_OVERLAP)
        async for event in self._log.read_all(
            after_position=start, types=list(REVOCATION_EVENT_TYPES)
        ):
            self._position = max(self._position, event.position)
            data = event.data
            if isinstance(data, UserDisabled):
                users.append(data.user_id)
            elif isinstance(data, PeerRemoved):
                peers.append(data.peer_id)
        self.disabled.update(users)
        self.disabled.update_peers(peers)
        log.debug(
            "security state loaded",
            kids=sorted(self.keys.kids),
            disabled=len(self.disabled),
            removed_peers=len(peers),
        )

    async def on_event(self, event: RecordedEvent) -> None:
        """Bus handler for :data:`SECURITY_EVENT_TYPES` (idempotent).

        A revocation applies at once. A key set is read from the log, never taken from
        the message (see the module's notes): a message whose event is not this log's
        is logged and changes nothing.
        """
        data = event.data
        if isinstance(data, UserDisabled):
            self.disabled.add(data.user_id)
        elif isinstance(data, PeerRemoved):
            self.disabled.add_peer(data.peer_id)
        elif isinstance(data, KeysRotated) and event.stream == AUTH_KEYS_STREAM:
            if event.seq <= self.keys.version or self._log is None:
                return  # a duplicate, an older set, or nothing to check it against
            async with self._lock:
                if event.seq > self.keys.version:
                    await self._load_keys(after_seq=self.keys.version, expected_id=event.id)
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
