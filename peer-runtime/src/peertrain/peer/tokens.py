"""Peer access tokens, renewed before they expire."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import structlog

from .api import ApiError, PeerApi
from .backoff import Backoff
from .identity import Identity

__all__ = ["TokenManager"]

log = structlog.get_logger(__name__)


class TokenManager:
    """Hold a valid access token; renew it when ``renew_fraction`` of its life is left.

    If auth cannot be reached, the old token is kept while it lasts and renewal is
    retried with backoff.
    """

    def __init__(
        self,
        api: PeerApi,
        identity: Identity,
        *,
        renew_fraction: float = 0.3,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.identity = identity
        self.renew_fraction = renew_fraction
        self.clock = clock
        self._token: str | None = None
        self._renew_at = 0.0
        self._expires_at = 0.0
        self._lock = asyncio.Lock()

    @property
    def current(self) -> str | None:
        """The token now (possibly stale), or ``None`` before the first login."""
        return self._token

    def due(self) -> bool:
        """Whether the token should be renewed now."""
        return self._token is None or self.clock() >= self._renew_at

    async def get(self) -> str:
        """A token, logging in again first if it is due.

        Raises
        ------
        ApiError
            If logging in fails and no unexpired token is left.
        """
        if not self.due():
            assert self._token is not None
            return self._token
        async with self._lock:
            if not self.due():
                assert self._token is not None
                return self._token
            try:
                issued = await self.api.token(self.identity.peer_id, self.identity.peer_secret)
            except ApiError:
                if self._token is not None and self.clock() < self._expires_at:
                    log.warning("token renewal failed; using the current token meanwhile")
                    self._renew_at = self.clock() + 5.0
                    return self._token
                raise
            now = self.clock()
            self._token = issued.access_token
            self._expires_at = now + issued.expires_in
            self._renew_at = now + issued.expires_in * (1 - self.renew_fraction)
            return self._token

    async def wait_for_token(self, stop: asyncio.Event, *, max_backoff_s: float = 15.0) -> str:
        """Log in, retrying while the platform is unreachable, until ``stop`` is set.

        Raises
        ------
        ApiError
            If the platform refuses the credentials (not worth retrying).
        asyncio.CancelledError
            If ``stop`` is set first.
        """
        backoff = Backoff(initial_s=0.5, max_s=max_backoff_s, early_max_s=2.0)
        while True:
            try:
                return await self.get()
            except ApiError as exc:
                if not exc.retryable:
                    raise
                delay = backoff.next()
                log.warning("cannot log in yet", error=str(exc), retry_in_s=round(delay, 2))
            try:
                await asyncio.wait_for(stop.wait(), delay)
            except TimeoutError:
                continue
            raise asyncio.CancelledError
