"""Taking broker access away: a removed peer, or any peer of a disabled user.

:meth:`Revoker.revoke` deletes the peer's RabbitMQ user and closes its connections at
once; when the management API fails, the peer stays pending and is retried in the
background with backoff until it works. Deletion is idempotent, so start-up simply
revokes every peer that should have no access (a crash between the event and the
deletion is covered too).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from peertrain.common.periodic import Background
from peertrain.registry.metrics import REVOCATIONS

__all__ = ["Revoker"]

log = structlog.get_logger(__name__)


class Revoker:
    """Deletes peers' broker users, retrying failures.

    Parameters
    ----------
    deprovision
        Deletes one peer's broker user and closes its connections (idempotent).
    retry_max_s
        Longest pause between retries.
    """

    def __init__(
        self, deprovision: Callable[[str], Awaitable[None]], *, retry_max_s: float = 30.0
    ) -> None:
        self.deprovision = deprovision
        self.retry_max_s = retry_max_s
        self.pending: set[str] = set()
        self._wake = asyncio.Event()
        self._loop = Background("registry-revoker", self._run)

    async def revoke(self, peer_id: str) -> bool:
        """Revoke now; on failure keep it pending for the retry loop. Returns success."""
        try:
            await self.deprovision(peer_id)
        except Exception as exc:
            REVOCATIONS.labels(outcome="failed").inc()
            log.warning("broker access not revoked yet; retrying", peer_id=peer_id, error=repr(exc))
            self.later(peer_id)
            return False
        self.pending.discard(peer_id)
        REVOCATIONS.labels(outcome="done").inc()
        log.info("broker access revoked", peer_id=peer_id)
        return True

    def later(self, peer_id: str) -> None:
        """Revoke in the background (start-up sweeps, failed attempts)."""
        self.pending.add(peer_id)
        self._wake.set()

    def start(self) -> None:
        """Start the retry loop."""
        self._loop.start()

    async def stop(self) -> None:
        """Stop retrying (what is pending is revoked again at the next start-up)."""
        await self._loop.stop()

    async def _run(self) -> None:
        delay = 0.5
        while True:
            if not self.pending:
                self._wake.clear()
                await self._wake.wait()
            failed = False
            for peer_id in sorted(self.pending):
                if not await self.revoke(peer_id):
                    failed = True
                    break  # the API is away: wait before trying the rest
            if failed:
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_max_s)
            else:
                delay = 0.5
